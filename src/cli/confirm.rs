//! `hookscope confirm`: the one GET that confirms a subscription a provider asked to be
//! confirmed (AWS SNS's SubscribeURL, Event Grid's validationUrl).

use std::process::ExitCode;

use clap::Args;
use hookscope::app::{self, AppError};

use super::{Common, exit_if, record_outbound};

/// `hookscope confirm`.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The handshake's delivery (its id in `list`)
    pub delivery_id: i64,
    /// Confirm even when the URL is not on the provider's own hosts (LocalStack, a test double)
    #[arg(long)]
    pub any_host: bool,
    /// Print the attempt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: ConfirmArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let store_file = paths.store_file();
    // A fresh machine's store is not created by a command that only reads it first.
    let Some(reader) = app::history::open_captured(&store_file)? else {
        return Err(AppError::Usage(format!(
            "no delivery #{} in the store: {}",
            args.delivery_id,
            app::history::nothing_captured(&store_file)
        )));
    };
    let confirmation = app::confirm::prepare(&reader, args.delivery_id, args.any_host)?;
    drop(reader);
    let attempt = record_outbound(
        &store_file,
        args.json,
        |writer| {
            let confirmation = &confirmation;
            async move { app::confirm::send(confirmation, &writer).await }
        },
        |attempt| {
            println!("GET {}", confirmation.url);
            println!("{}", app::confirm::summary(&confirmation, attempt));
        },
    )?;
    Ok(exit_if(attempt.succeeded()))
}
