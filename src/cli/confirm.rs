//! `hookscope confirm`: the one GET that confirms a subscription a provider asked to be
//! confirmed (AWS SNS's SubscribeURL, Event Grid's validationUrl).

use std::process::ExitCode;

use clap::Args;
use hookscope::app::{self, AppError};
use hookscope::store::{Reader, Store};

use super::{Common, exit_if};

/// `hookscope confirm`.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The handshake's delivery (its id in `list`)
    pub delivery_id: i64,
    /// Print the attempt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: ConfirmArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let reader = Reader::open(&paths.store_file())?;
    let confirmation = app::confirm::prepare(&reader, args.delivery_id)?;
    let store = Store::open(&paths.store_file())?;
    let writer = store.writer();
    let sent = app::small_runtime()?.block_on(app::confirm::send(&confirmation, &writer));
    drop(writer);
    store.shutdown();
    let attempt = sent?;
    if args.json {
        let text = serde_json::to_string(&attempt).map_err(|e| AppError::Failed(e.to_string()))?;
        println!("{text}");
    } else {
        println!("GET {}", confirmation.url);
        println!("{}", app::confirm::summary(&confirmation, &attempt));
    }
    Ok(exit_if(app::confirm::accepted(&attempt)))
}
