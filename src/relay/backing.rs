//! Where a running relay keeps its channels and deliveries: the SQLite file in its data dir
//! (one relay on one host, the default), or a NATS JetStream cluster (any number of relay
//! instances for a team). The server asks the same questions of either.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::domain::sync::Lock;
use std::time::Duration;

use crate::relay::jet::Jet;
use crate::relay::store::{self, Channel, RelayStoreError, Writer};

/// Where the relay keeps what it takes, as the user chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// `relay.sqlite` in this data dir.
    Dir(PathBuf),
    /// A NATS JetStream cluster: its servers (`nats://HOST:PORT[,HOST:PORT…]`), and the
    /// replicas each new stream gets (`None`: 3 when the cluster has 3 servers or more).
    Cluster {
        /// The servers.
        urls: String,
        /// The replicas.
        replicas: Option<usize>,
    },
}

/// The SQLite store, as the server holds it.
pub struct Sqlite {
    /// Its data dir.
    pub data_dir: PathBuf,
    writer: Writer,
    /// For token checks and channel lookups: read where `relay channel …` writes.
    lookups: Lock<rusqlite::Connection>,
}

/// The store the server uses.
pub enum Backing {
    /// One SQLite file.
    Sqlite(Sqlite),
    /// A JetStream cluster.
    Cluster(Arc<Jet>),
}

impl Backing {
    /// Opens the store the user chose.
    pub async fn open(choice: &StoreChoice) -> Result<Backing, RelayStoreError> {
        match choice {
            StoreChoice::Dir(data_dir) => Ok(Backing::Sqlite(Sqlite::open(data_dir)?)),
            StoreChoice::Cluster { urls, replicas } => {
                let jet = Jet::connect(urls, *replicas, Duration::from_secs(5)).await?;
                Ok(Backing::Cluster(Arc::new(jet)))
            }
        }
    }

    /// One channel.
    pub async fn channel(&self, name: &str) -> Result<Option<Channel>, RelayStoreError> {
        match self {
            Backing::Sqlite(s) => store::channel(&s.lookups.lock(), name),
            Backing::Cluster(jet) => jet.channel(name).await,
        }
    }

    /// Every channel.
    pub async fn channels(&self) -> Result<Vec<Channel>, RelayStoreError> {
        match self {
            Backing::Sqlite(s) => store::channels(&s.lookups.lock()),
            Backing::Cluster(jet) => jet.channels().await,
        }
    }

    /// Makes ready what a channel new to this relay needs (its stream, on a cluster).
    pub async fn prepare(&self, channel: &Channel) {
        if let Backing::Cluster(jet) = self
            && let Err(e) = jet.ensure_stream(channel).await
        {
            eprintln!("relay: channel {}: {e}", channel.name);
        }
    }

    /// Stores a sealed delivery; answers its sequence number once it is durable (synced to
    /// disk, or on a quorum of the cluster). `reply` names where the provider waits for an
    /// answer, on a cluster.
    pub async fn insert(
        &self,
        channel: &Channel,
        received_ms: i64,
        size: u64,
        sealed: Vec<u8>,
        reply: Option<&str>,
    ) -> Result<u64, RelayStoreError> {
        match self {
            Backing::Sqlite(s) => {
                let name = channel.name.as_str();
                s.writer.insert(name, received_ms, size, sealed).await
            }
            Backing::Cluster(jet) => jet.publish(channel, received_ms, size, sealed, reply).await,
        }
    }

    /// Records a subscriber's acknowledgement.
    pub async fn ack(&self, channel: &Channel, seq: u64) {
        match self {
            Backing::Sqlite(s) => s.writer.ack(&channel.name, seq).await,
            Backing::Cluster(jet) => jet.ack(channel, seq).await,
        }
    }

    /// Drops what the retention no longer keeps; answers how many.
    pub async fn retain(&self, now_ms: i64) -> Result<u64, RelayStoreError> {
        match self {
            Backing::Sqlite(s) => s.writer.retain(now_ms).await,
            Backing::Cluster(jet) => {
                jet.retain(now_ms - store::KEEP_ACKNOWLEDGED.as_millis() as i64)
                    .await
            }
        }
    }

    /// The cluster, when the relay runs on one.
    pub fn cluster(&self) -> Option<&Arc<Jet>> {
        match self {
            Backing::Cluster(jet) => Some(jet),
            Backing::Sqlite(_) => None,
        }
    }
}

impl Sqlite {
    fn open(data_dir: &Path) -> Result<Sqlite, RelayStoreError> {
        let writer = store::start_writer(data_dir)?;
        let lookups = store::open(data_dir)?;
        lookups.busy_timeout(Duration::from_secs(10))?;
        Ok(Sqlite {
            data_dir: data_dir.to_path_buf(),
            writer,
            lookups: Lock::new(lookups),
        })
    }
}
