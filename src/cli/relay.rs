//! `hookscope relay`: run the relay (`serve`), manage its channels, and make this laptop's
//! relay key.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use hookscope::app::AppError;
use hookscope::app::relay::{self, Keep, NewChannel};
use hookscope::relay::backing::StoreChoice;
use hookscope::relay::server::{Limits, OfflineAnswer, ServeOptions};

use super::Common;

/// The relay's port unless told.
const DEFAULT_PORT: u16 = 7880;

/// `hookscope relay`.
#[derive(Debug, Args)]
pub struct RelayArgs {
    #[command(subcommand)]
    pub command: RelayCommand,
    /// Keep channels and deliveries on a NATS JetStream cluster instead of the data dir, for
    /// several relay instances (default: [relay] store in config.toml)
    #[arg(long, global = true, value_name = "nats://HOST:PORT[,HOST:PORT…]")]
    pub store: Option<String>,
    /// The copies of each channel's stream on the cluster (default: 3 when it has 3 servers or
    /// more, else 1)
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub replicas: Option<u8>,
}

/// The relay's subcommands.
#[derive(Debug, Subcommand)]
pub enum RelayCommand {
    /// Run the relay: a public URL that keeps every delivery, sealed, until a laptop takes it
    Serve(ServeArgs),
    /// Make, list, remove a channel, or rotate its token
    Channel {
        #[command(subcommand)]
        command: ChannelCommand,
    },
    /// Print this laptop's relay key (made once, kept in the data dir with mode 0600)
    Key {
        /// Print {"recipient", "identity_file", "created"}
        #[arg(long)]
        json: bool,
    },
}

/// What the provider is answered when no laptop answers in time.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Offline {
    /// 202 with {"relayed": true, "seq": N}
    Accept,
    /// 503 with Retry-After, so the provider's own retries run
    Retry,
}

/// `hookscope relay serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to bind (behind Caddy or nginx, keep loopback)
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: IpAddr,
    /// The port
    #[arg(long, short = 'p', default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Serve https with this certificate chain (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How long a provider waits for a connected laptop's answer, in seconds
    #[arg(long, default_value_t = 8, value_name = "SECS")]
    pub answer_timeout: u64,
    /// The answer when no laptop answers in time
    #[arg(long, value_enum, default_value = "accept")]
    pub offline_answer: Offline,
    /// The largest body taken, in bytes (default 25 MiB, GitHub's own)
    #[arg(long, value_name = "BYTES")]
    pub body_limit: Option<usize>,
    /// The most connections from one address
    #[arg(long, value_name = "N")]
    pub max_per_address: Option<usize>,
}

/// `hookscope relay channel …`.
#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Make a channel sealed to one or more laptops' keys; prints its token once
    Add {
        /// [a-z0-9-], 1 to 64
        name: String,
        /// A laptop's relay key (age1…, from `hookscope relay key`); repeatable
        #[arg(long = "recipient", value_name = "KEY", required = true)]
        recipients: Vec<String>,
        /// Drop deliveries older than this many days
        #[arg(long, default_value_t = 7, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..))]
        keep_days: u32,
        /// Keep at most this many MiB no laptop acknowledged; past it, providers get 429
        #[arg(long, default_value_t = 1024, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
        keep_mib: u64,
        /// Print {"channel", "token", "ingest_path", "subscribe_path"}
        #[arg(long)]
        json: bool,
    },
    /// List the channels
    List {
        /// One JSON object per channel
        #[arg(long)]
        json: bool,
    },
    /// Remove a channel and every delivery it kept
    Remove {
        /// The channel
        name: String,
    },
    /// Give a channel a new token; the old one stops working at once
    Rotate {
        /// The channel
        name: String,
        /// Print {"channel", "token", "ingest_path", "subscribe_path"}
        #[arg(long)]
        json: bool,
    },
    /// Seal a channel's new deliveries to one more laptop's key as well
    AddRecipient {
        /// The channel
        name: String,
        /// The laptop's relay key (age1…)
        key: String,
    },
}

pub fn run(common: &Common, args: RelayArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let data_dir = paths.data_dir.clone();
    let store = match args.store {
        Some(urls) => Some(urls),
        None if !matches!(args.command, RelayCommand::Key { .. }) => {
            super::load_config(&paths)?.file.relay.store
        }
        None => None,
    };
    let store = match store {
        Some(urls) => StoreChoice::Cluster {
            urls,
            replicas: args.replicas.map(usize::from),
        },
        None if args.replicas.is_some() => {
            return Err(AppError::Usage(
                "--replicas is for a relay on a NATS cluster: add --store nats://HOST:PORT".into(),
            ));
        }
        None => StoreChoice::Dir(data_dir.clone()),
    };
    match args.command {
        RelayCommand::Serve(args) => serve(store, args),
        RelayCommand::Channel { command } => channel(&store, command),
        RelayCommand::Key { json } => {
            let key = relay::key(&data_dir)?;
            if json {
                print_json(&key)?;
            } else {
                if key.created {
                    eprintln!(
                        "hookscope: made a relay key in {}",
                        key.identity_file.display()
                    );
                }
                println!("{}", key.recipient);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn serve(store: StoreChoice, args: ServeArgs) -> Result<ExitCode, AppError> {
    let mut limits = Limits::default();
    if let Some(limit) = args.body_limit {
        limits.body_limit = limit;
    }
    if let Some(n) = args.max_per_address {
        limits.max_per_address = n.max(1);
    }
    let options = ServeOptions {
        store,
        addr: SocketAddr::new(args.bind, args.port),
        tls: args.tls_cert.zip(args.tls_key),
        answer_timeout: Duration::from_secs(args.answer_timeout),
        offline: match args.offline_answer {
            Offline::Accept => OfflineAnswer::Accepted,
            Offline::Retry => OfflineAnswer::Retry,
        },
        limits,
    };
    relay::serve(options, |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        eprintln!("relay listening on {scheme}://{addr}");
    })?;
    eprintln!("relay stopped");
    Ok(ExitCode::SUCCESS)
}

fn channel(store: &StoreChoice, command: ChannelCommand) -> Result<ExitCode, AppError> {
    match command {
        ChannelCommand::Add {
            name,
            recipients,
            keep_days,
            keep_mib,
            json,
        } => {
            let keep = Keep {
                days: keep_days,
                mib: keep_mib,
            };
            let made = relay::add_channel(store, &name, &recipients, keep)?;
            print_channel(&made, json, "made")?;
        }
        ChannelCommand::List { json } => {
            for channel in relay::channels(store)? {
                if json {
                    print_json(&serde_json::json!({
                        "channel": channel.name,
                        "recipients": channel.recipients,
                        "last_seq": channel.last_seq,
                        "acked_seq": channel.acked_seq,
                        "stored_bytes": channel.stored_bytes,
                        "keep_days": channel.keep_days,
                        "keep_bytes": channel.keep_bytes,
                    }))?;
                } else {
                    println!(
                        "{}  {} recipient(s)  {} received, {} acknowledged  {} kept",
                        channel.name,
                        channel.recipients.len(),
                        channel.last_seq,
                        channel.acked_seq,
                        hookscope::domain::fmt::exact_size(channel.stored_bytes as usize)
                    );
                }
            }
        }
        ChannelCommand::Remove { name } => {
            let dropped = relay::remove_channel(store, &name)?;
            eprintln!("hookscope: removed channel {name} and the {dropped} deliveries it kept");
        }
        ChannelCommand::Rotate { name, json } => {
            let rotated = relay::rotate(store, &name)?;
            print_channel(&rotated, json, "has a new token")?;
        }
        ChannelCommand::AddRecipient { name, key } => {
            relay::add_recipient(store, &name, &key)?;
            eprintln!("hookscope: channel {name} seals its new deliveries to {key} as well");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_channel(channel: &NewChannel, json: bool, what: &str) -> Result<(), AppError> {
    if json {
        return print_json(channel);
    }
    println!("channel {} {what}", channel.channel);
    println!(
        "  providers post to  https://YOUR-RELAY{}…",
        channel.ingest_path
    );
    println!(
        "  laptops subscribe  https://YOUR-RELAY{}",
        channel.subscribe_path
    );
    println!("  token              {}", channel.token);
    println!("The token is shown once; the relay keeps only its hash.");
    Ok(())
}

fn print_json(value: &impl serde::Serialize) -> Result<(), AppError> {
    let text = serde_json::to_string(value).map_err(|e| AppError::Failed(e.to_string()))?;
    println!("{text}");
    Ok(())
}
