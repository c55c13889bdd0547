//! `hookscope export`: fixtures, HAR or curl.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::export::ExportRequest;
use hookscope::app::{self, AppError};

use super::{Common, load_config};

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// hookscope fixtures (JSON; see assets/fixture.schema.json)
    Fixture,
    /// HAR 1.2
    Har,
    /// a shell script of curl commands
    Curl,
}

/// `hookscope export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// What to write
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Deliveries by id: 3 4, or 1,2,7-9
    #[arg(long, num_args = 1.., value_name = "ID", conflicts_with = "filter", required_unless_present = "filter")]
    pub ids: Vec<String>,
    /// Deliveries matching a filter (the list's language, e.g. 'sig:fail type:job.failed')
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Fixtures: re-sign under a generated test secret written into the fixture (the real secret never is)
    #[arg(long)]
    pub resign_with_test_secret: bool,
    /// Fixtures: the scheme to re-sign with when a delivery has none
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// Fixtures: replace the JSON value at this pointer with "[redacted]" (repeatable; needs --resign-with-test-secret)
    #[arg(long, value_name = "PTR")]
    pub redact: Vec<String>,
    /// Fixtures: write example tests (pytest, node:test, Rust) beside each fixture
    #[arg(long)]
    pub snippets: bool,
    /// The file to write; for fixtures, a directory (ending in /) gets one file per delivery
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
}

pub fn run(common: &Common, args: ExportArgs) -> Result<ExitCode, AppError> {
    // Bad ids are an error even when there is nothing to export, as a bad filter is.
    let ids = app::list::parse_ids(&args.ids)?;
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let Some(reader) = super::captured_history(&paths, args.filter.as_deref())? else {
        return Ok(ExitCode::SUCCESS);
    };
    let request = ExportRequest {
        ids,
        filter: args.filter,
        format: match args.format {
            ExportFormat::Fixture => hookscope::export::Format::Fixture,
            ExportFormat::Har => hookscope::export::Format::Har,
            ExportFormat::Curl => hookscope::export::Format::Curl,
        },
        resign_with_test_secret: args.resign_with_test_secret,
        scheme: args.scheme,
        redact: args.redact,
        snippets: args.snippets,
        out: args.out,
    };
    let exported = app::export::export(&file, &reader, &request).map_err(super::list::with_flag)?;
    for path in &exported.files {
        eprintln!("wrote {}", path.display());
    }
    eprintln!("exported {} deliveries", exported.deliveries);
    Ok(ExitCode::SUCCESS)
}
