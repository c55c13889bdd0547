//! Starts hookscope: the desktop window with no subcommand, otherwise a headless command.

mod ui;

use std::net::IpAddr;
use std::process::ExitCode;

use clap::Parser as _;
use hookscope::cli::{self, Cli};
use hookscope::engine::EngineOptions;

fn main() -> ExitCode {
    ui::mark_process_start();
    let cli = Cli::parse();
    if cli.command.is_some() {
        return cli::main_with_args(cli);
    }
    match open_window(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("hookscope: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn open_window(cli: &Cli) -> anyhow::Result<()> {
    let data_dir = cli::data_dir(&cli.common)?;
    let config_path = cli
        .common
        .config
        .clone()
        .unwrap_or_else(|| data_dir.join(cli::CONFIG_FILE));
    let config = hookscope::config::load_file(&config_path).map_err(|e| {
        anyhow::anyhow!("{e} (fix it, or move it aside: hookscope then starts with the defaults)")
    })?;
    let bind: IpAddr = match &config.receiver.bind {
        Some(text) => text.parse().map_err(|_| {
            anyhow::anyhow!(
                "[receiver] bind = \"{text}\" in {} is not an IP address",
                config_path.display()
            )
        })?,
        None => IpAddr::from([127, 0, 0, 1]),
    };
    ui::run(EngineOptions {
        data_dir,
        config_path,
        bind,
        port: None,
    })
}
