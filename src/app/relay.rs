//! The relay's use cases: run the relay (`serve`), manage its channels (in the relay's data dir,
//! or on the NATS JetStream cluster a team's relays share), and the laptop's relay key (the age
//! identity that opens what a channel seals to it), kept in the data dir with mode 0600.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::app::AppError;
use crate::domain::clock::now_ms;
use crate::relay::backing::StoreChoice;
use crate::relay::jet::Jet;
use crate::relay::seal::{self, Identity};
use crate::relay::server::{ServeOptions, Server};
use crate::relay::store::{self, Channel, RelayStoreError};
use crate::relay::token;

/// The laptop's relay key file, in its data dir.
pub const KEY_FILE: &str = "relay-key.txt";

impl From<RelayStoreError> for AppError {
    fn from(e: RelayStoreError) -> AppError {
        match e {
            RelayStoreError::NoChannel(_) | RelayStoreError::Exists(_) => {
                AppError::Usage(e.to_string())
            }
            e => AppError::Failed(e.to_string()),
        }
    }
}

/// A channel just made: its token is shown once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NewChannel {
    /// Its name.
    pub channel: String,
    /// The subscriber token (the relay keeps only its hash).
    pub token: String,
    /// Where providers post (`/in/NAME/`, then any path).
    pub ingest_path: String,
    /// Where subscribers connect.
    pub subscribe_path: String,
}

impl NewChannel {
    fn of(name: &str, token: String) -> NewChannel {
        NewChannel {
            channel: name.to_string(),
            token,
            ingest_path: format!("/in/{name}/"),
            subscribe_path: format!("/sub/{name}"),
        }
    }
}

/// What a channel keeps.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// Days.
    pub days: u32,
    /// MiB of deliveries no subscriber acknowledged.
    pub mib: u64,
}

impl Default for Keep {
    fn default() -> Keep {
        Keep { days: 7, mib: 1024 }
    }
}

/// Runs `work` on the cluster, in a runtime of its own (the channel commands are short).
fn on_cluster<T>(
    urls: &str,
    replicas: Option<usize>,
    work: impl AsyncFnOnce(&Jet) -> Result<T, RelayStoreError>,
) -> Result<T, AppError> {
    let runtime = crate::app::background::runtime(1)?;
    let done = runtime.block_on(async {
        // A command may wait longer than a provider: a cluster busy replicating a burst
        // answers its API slowly.
        let jet = Jet::connect(urls, replicas, std::time::Duration::from_secs(30)).await?;
        work(&jet).await
    });
    Ok(done?)
}

/// Makes a channel sealed to `recipients` (`age1…` keys).
pub fn add_channel(
    store: &StoreChoice,
    name: &str,
    recipients: &[String],
    keep: Keep,
) -> Result<NewChannel, AppError> {
    token::check_channel_name(name).map_err(AppError::Usage)?;
    seal::recipients(recipients).map_err(|e| AppError::Usage(e.to_string()))?;
    let (token, token_hash) = token::generate();
    let mut uid = [0u8; 16];
    getrandom::fill(&mut uid).map_err(|e| AppError::Failed(e.to_string()))?;
    let channel = Channel {
        name: name.to_string(),
        uid: hex::encode(uid),
        token_hash,
        recipients: recipients.iter().map(|r| r.trim().to_string()).collect(),
        created_ms: now_ms(),
        keep_days: keep.days,
        keep_bytes: keep.mib.saturating_mul(1024 * 1024),
        last_seq: 0,
        stored_bytes: 0,
        acked_seq: 0,
    };
    match store {
        StoreChoice::Dir(data_dir) => store::add_channel(&store::open(data_dir)?, &channel)?,
        StoreChoice::Cluster { urls, replicas } => {
            on_cluster(urls, *replicas, async |jet| jet.add_channel(&channel).await)?;
        }
    }
    Ok(NewChannel::of(name, token))
}

/// Every channel, with its counters.
pub fn channels(store: &StoreChoice) -> Result<Vec<Channel>, AppError> {
    match store {
        StoreChoice::Dir(data_dir) if !store::path(data_dir).exists() => Ok(Vec::new()),
        StoreChoice::Dir(data_dir) => Ok(store::channels(&store::open(data_dir)?)?),
        StoreChoice::Cluster { urls, replicas } => on_cluster(urls, *replicas, async |jet| {
            jet.channels_with_counts().await
        }),
    }
}

/// Removes a channel and what it kept; answers how many deliveries went.
pub fn remove_channel(store: &StoreChoice, name: &str) -> Result<u64, AppError> {
    match store {
        StoreChoice::Dir(data_dir) => Ok(store::remove_channel(&store::open(data_dir)?, name)?),
        StoreChoice::Cluster { urls, replicas } => {
            on_cluster(urls, *replicas, async |jet| jet.remove_channel(name).await)
        }
    }
}

/// Changes a channel's token hash and recipients, as `change` makes them from the channel.
fn update(
    store: &StoreChoice,
    name: &str,
    change: impl FnOnce(&Channel) -> (Vec<u8>, Vec<String>),
) -> Result<(), AppError> {
    let missing = || RelayStoreError::NoChannel(name.into());
    match store {
        StoreChoice::Dir(data_dir) => {
            let conn = store::open(data_dir)?;
            let channel = store::channel(&conn, name)?.ok_or_else(missing)?;
            let (hash, recipients) = change(&channel);
            store::update_channel(&conn, name, &hash, &recipients)?;
            Ok(())
        }
        StoreChoice::Cluster { urls, replicas } => on_cluster(urls, *replicas, async |jet| {
            let channel = jet.channel(name).await?.ok_or_else(missing)?;
            let (hash, recipients) = change(&channel);
            jet.update_channel(name, &hash, &recipients).await
        }),
    }
}

/// A new token for a channel; the old one stops working at once (its open streams end within a
/// second).
pub fn rotate(store: &StoreChoice, name: &str) -> Result<NewChannel, AppError> {
    let (token, hash) = token::generate();
    update(store, name, |channel| (hash, channel.recipients.clone()))?;
    Ok(NewChannel::of(name, token))
}

/// Adds a recipient: deliveries stored from now are sealed to it as well.
pub fn add_recipient(store: &StoreChoice, name: &str, key: &str) -> Result<(), AppError> {
    seal::recipients(&[key.to_string()]).map_err(|e| AppError::Usage(e.to_string()))?;
    update(store, name, |channel| {
        let mut recipients = channel.recipients.clone();
        if !recipients.iter().any(|r| r == key.trim()) {
            recipients.push(key.trim().to_string());
        }
        (channel.token_hash.clone(), recipients)
    })
}

/// The laptop's relay key.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RelayKey {
    /// The public key to add to a channel (`age1…`).
    pub recipient: String,
    /// The identity file (secret).
    pub identity_file: PathBuf,
    /// Whether it was made now.
    pub created: bool,
}

/// The laptop's relay key, made (mode 0600) when there is none yet.
pub fn key(data_dir: &Path) -> Result<RelayKey, AppError> {
    let file = data_dir.join(KEY_FILE);
    if file.exists() {
        return Ok(RelayKey {
            recipient: identity(data_dir)?.recipient(),
            identity_file: file,
            created: false,
        });
    }
    let identity = Identity::generate();
    write_private(&file, identity.to_file_text(true).as_bytes())
        .map_err(|e| AppError::Failed(format!("cannot write {}: {e}", file.display())))?;
    Ok(RelayKey {
        recipient: identity.recipient(),
        identity_file: file,
        created: true,
    })
}

/// The laptop's relay key (its public half), when one was made; reads the data dir only.
pub fn existing_key(data_dir: &Path) -> Option<String> {
    data_dir
        .join(KEY_FILE)
        .exists()
        .then(|| identity(data_dir).ok().map(|i| i.recipient()))
        .flatten()
}

/// The laptop's relay identity, to open what the relay sends.
pub fn identity(data_dir: &Path) -> Result<Identity, AppError> {
    let file = data_dir.join(KEY_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            AppError::Usage(format!(
                "no relay key in {}: make one with `hookscope relay key` and add its public key to the channel",
                data_dir.display()
            ))
        } else {
            AppError::Failed(format!("cannot read {}: {e}", file.display()))
        }
    })?;
    Identity::parse(&text).map_err(|e| AppError::Failed(format!("{}: {e}", file.display())))
}

/// Where `listen --relay …` or `[relay]` subscribes (the flags win over the config).
#[derive(Debug, Clone, Default)]
pub struct RelayFlags {
    /// `--relay URL`.
    pub url: Option<String>,
    /// `--relay-token-env NAME`.
    pub token_env: Option<String>,
    /// `--relay-token-file FILE`.
    pub token_file: Option<PathBuf>,
}

/// The relay subscription the flags and `[relay]` ask for, with this laptop's key; `None` when
/// neither names a relay.
pub fn subscription(
    data_dir: &Path,
    section: &crate::config::RelaySection,
    flags: &RelayFlags,
) -> Result<Option<crate::net::relay::RelayConfig>, AppError> {
    let Some(url) = flags.url.clone().or_else(|| section.url.clone()) else {
        return Ok(None);
    };
    // Each source is named as the user gave it: a flag of `listen`, or a key of `[relay]` (the
    // window's Relay section writes those).
    let url_words = if flags.url.is_some() {
        "--relay"
    } else {
        "[relay] url"
    };
    crate::net::client::check_url(&url)
        .map_err(|e| AppError::Usage(format!("{url_words}: {e}")))?;
    let from_flags = flags.token_env.is_some() || flags.token_file.is_some();
    let (env, file) = if from_flags {
        (flags.token_env.clone(), flags.token_file.clone())
    } else {
        (section.token_env.clone(), section.token_file.clone())
    };
    let kept = section
        .token
        .clone()
        .filter(|t| !from_flags && !t.trim().is_empty());
    let (env_words, file_words) = if from_flags {
        ("--relay-token-env", "--relay-token-file")
    } else {
        ("[relay] token_env", "[relay] token_file")
    };
    let token = match (env, file) {
        (None, None) if kept.is_some() => kept.unwrap_or_default(),
        (Some(name), _) => std::env::var(&name)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| {
                AppError::Usage(format!("{env_words} {name}: the variable is not set"))
            })?,
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|e| AppError::Usage(format!("{file_words} {}: {e}", path.display())))?,
        (None, None) if flags.url.is_some() => {
            return Err(AppError::Usage(
                "the relay needs its channel's token: --relay-token-env NAME or --relay-token-file FILE (or token_env, token_file or token in [relay])".to_string(),
            ));
        }
        (None, None) => {
            return Err(AppError::Usage(
                "the relay needs its channel's token: token, token_env or token_file in [relay]"
                    .to_string(),
            ));
        }
    };
    Ok(Some(crate::net::relay::RelayConfig {
        url: url.trim_end_matches('/').to_string(),
        token: token.trim().to_string(),
        identity: std::sync::Arc::new(identity(data_dir)?),
    }))
}

/// Writes a new file only its owner can read (mode 0600 on Unix; elsewhere the user's profile
/// folder's own permissions apply).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Runs the relay until Ctrl-C or SIGTERM; `ready` is told the address and whether it serves
/// https once it listens.
pub fn serve(options: ServeOptions, ready: impl FnOnce(SocketAddr, bool)) -> Result<(), AppError> {
    let runtime = crate::app::background::runtime(2)?;
    runtime.block_on(async {
        let server = Server::bind(options)
            .await
            .map_err(|e| AppError::Failed(e.to_string()))?;
        if let Some(addr) = server.local_addr() {
            ready(addr, server.is_tls());
        }
        server.run(crate::app::background::interrupted()).await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RelaySection;

    fn refusal(section: &RelaySection, flags: &RelayFlags) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        match subscription(dir.path(), section, flags) {
            Err(AppError::Usage(why)) => why,
            Err(other) => panic!("expected a usage refusal, got {other}"),
            Ok(_) => panic!("expected a refusal, got a subscription"),
        }
    }

    #[test]
    fn a_relay_refusal_names_the_source_the_user_gave() {
        // From `listen --relay`: the flags.
        let flags = RelayFlags {
            url: Some("ftp://relay".into()),
            ..RelayFlags::default()
        };
        assert!(refusal(&RelaySection::default(), &flags).starts_with("--relay: "));
        let flags = RelayFlags {
            url: Some("https://relay.example/sub/team".into()),
            ..RelayFlags::default()
        };
        assert!(
            refusal(&RelaySection::default(), &flags).contains("--relay-token-env NAME"),
            "{}",
            refusal(&RelaySection::default(), &flags)
        );
        // From `[relay]` (what the window's Relay section writes): its keys, no flag.
        let section = RelaySection {
            url: Some("ftp://relay".into()),
            ..RelaySection::default()
        };
        let why = refusal(&section, &RelayFlags::default());
        assert!(why.starts_with("[relay] url: "), "{why}");
        let section = RelaySection {
            url: Some("https://relay.example/sub/team".into()),
            ..RelaySection::default()
        };
        let why = refusal(&section, &RelayFlags::default());
        assert_eq!(
            why,
            "the relay needs its channel's token: token, token_env or token_file in [relay]"
        );
    }
}
