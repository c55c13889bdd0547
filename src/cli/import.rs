//! `hookscope import`: a HAR file into the store.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::{self, AppError};
use hookscope::store::Store;

use super::{Common, load_config};

/// `hookscope import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A HAR file (from Chrome DevTools, Insomnia, HTTP Toolkit or hookscope)
    pub file: PathBuf,
}

pub fn run(common: &Common, args: ImportArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let store = Store::open(&paths.store_file())?;
    let writer = store.writer();
    let imported = app::export::import_har(&file, &writer, &args.file);
    drop(writer);
    store.shutdown();
    let count = imported?.len();
    eprintln!("imported {count} deliveries from {}", args.file.display());
    Ok(ExitCode::SUCCESS)
}
