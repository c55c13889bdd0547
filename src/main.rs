//! Starts hookscope: the desktop window with no subcommand, otherwise a headless command.

mod cli;
mod ui;

use std::process::ExitCode;

use clap::Parser as _;
use hookscope::app;
use hookscope::engine::EngineOptions;

fn main() -> ExitCode {
    ui::mark_process_start();
    let parsed = cli::Cli::parse();
    if let Some(command) = parsed.command {
        return cli::run(&parsed.common, command);
    }
    match open_window(&parsed.common) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("hookscope: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn open_window(common: &cli::Common) -> anyhow::Result<()> {
    let paths = common.paths()?;
    let config = paths.load_config()?.file;
    let bind = app::paths::bind_address(None, &config, &paths.config_path)?;
    ui::run(EngineOptions {
        data_dir: paths.data_dir,
        config_path: paths.config_path,
        bind,
        port: None,
    })
}
