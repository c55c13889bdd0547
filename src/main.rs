//! Starts hookscope: the desktop window with no subcommand, otherwise a headless command.

mod cli;
mod ui;

use std::process::ExitCode;

use clap::Parser as _;
use hookscope::app;
use hookscope::engine::EngineOptions;

fn main() -> ExitCode {
    ui::mark_process_start();
    return_large_blocks();
    let parsed = cli::Cli::parse();
    if let Some(command) = parsed.command {
        return cli::run(&parsed.common, command);
    }
    match open_window(&parsed.common) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let message = format!("{err:#}");
            eprintln!("hookscope: {message}");
            show_start_error(&message);
            ExitCode::FAILURE
        }
    }
}

/// A window started from the application menu has no stderr anyone reads, so a start-up error
/// is also shown in a native dialog: when there is a display to show it on and stderr is not a
/// terminal (from a terminal, the line above is enough). rfd asks zenity on Linux; without it the
/// dialog is skipped at once.
fn show_start_error(message: &str) {
    use std::io::IsTerminal as _;
    let has_display = cfg!(any(target_os = "windows", target_os = "macos"))
        || std::env::var_os("DISPLAY").is_some()
        || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if !has_display || std::io::stderr().is_terminal() {
        return;
    }
    let _ = rfd::MessageDialog::new()
        .set_level(rfd::MessageLevel::Error)
        .set_title("hookscope could not start")
        .set_description(message)
        .set_buttons(rfd::MessageButtons::Ok)
        .show();
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

/// Blocks of 256 KiB and more are mapped and unmapped on their own (glibc's `M_MMAP_THRESHOLD`,
/// fixed). By default glibc raises that threshold to the size of each large block freed, so after
/// one 10 MiB delivery the next copies of it came from the heap and stayed there: `listen` kept
/// ~50 MiB more after a single 10 MiB body. Linux
/// with glibc only; the
/// binary's only other `unsafe` is the text index's thread priority (src/store/text.rs).
#[allow(unsafe_code)]
fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}
