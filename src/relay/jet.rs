//! The relay's store on a NATS JetStream cluster, for a team: any number of relay instances in
//! front of one cluster, each knowing every channel and every delivery.
//!
//! - Channels (name, uid, token hash, recipients, retention) are JSON values in the key-value
//!   bucket [`CHANNELS`]; what subscribers acknowledged is in [`ACKS`].
//! - Each channel's deliveries are a stream of its own, `hookscope-relay-NAME` on subject
//!   `hookscope.relay.in.NAME`: its sequence numbers are the channel's (1, 2, 3 … with no gap
//!   that another channel made), and its limits are the channel's retention (`max_age`,
//!   `max_bytes` with new deliveries refused when full).
//! - A delivery is acknowledged to its provider once JetStream acknowledged the publish: stored
//!   on a quorum of the stream's replicas. What is published is the sealed age file, so the
//!   cluster's operators cannot read it either.
//! - A provider waiting for a laptop's answer is held by the instance that took its request: it
//!   listens on an inbox named in the delivery's headers, and the instance a laptop posts the
//!   answer to sends it there as a NATS request; the first answer is taken, later ones refused.
//! - Whether a laptop is caught up somewhere (so a provider is worth holding) is said by each
//!   instance every second on `hookscope.relay.presence.NAME`.

use crate::domain::sync::Lock;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, kv, stream};
use futures_util::StreamExt as _;

use crate::relay::store::{Channel, RelayStoreError};

/// The bucket of channels, by name.
pub const CHANNELS: &str = "hookscope-relay-channels";
/// The bucket of acknowledgements: the newest sequence number a subscriber stored, by channel.
pub const ACKS: &str = "hookscope-relay-acks";
/// The header with the time the relay took a delivery (ms since the epoch).
const RECEIVED: &str = "Hookscope-Received-Ms";
/// The header with the request's size before sealing.
const SIZE: &str = "Hookscope-Size";
/// The header naming the inbox where a waiting provider's instance takes the answer.
const REPLY: &str = "Hookscope-Reply";
/// How long a provider is kept waiting while the cluster cannot take its delivery (a leader
/// being elected), before it is refused.
const PATIENCE: Duration = Duration::from_secs(8);
/// How often a refused publish is tried again within [`PATIENCE`].
const RETRY_EVERY: Duration = Duration::from_millis(250);
/// How long a presence message counts.
const PRESENCE_FOR: Duration = Duration::from_secs(3);
/// The most a sealed delivery's envelope and age overhead add to a body, taken off the
/// cluster's `max_payload` to find the largest body the relay can take.
pub const OVERHEAD: usize = 64 * 1024;

/// The stream that holds a channel's deliveries: named after the channel and its uid, so that
/// a channel removed and made again under its name never finds the old one's stream.
pub fn stream_name(name: &str, uid: &str) -> String {
    format!("hookscope-relay-{name}-{}", short(uid))
}

/// The subject a channel's deliveries are published on.
pub fn subject(name: &str, uid: &str) -> String {
    format!("hookscope.relay.in.{name}.{}", short(uid))
}

fn short(uid: &str) -> &str {
    uid.get(..12).unwrap_or(uid)
}

fn failed(what: &str, e: impl std::fmt::Display) -> RelayStoreError {
    RelayStoreError::Cluster(format!("{what}: {e}"))
}

/// A channel as the bucket keeps it (the counters are the stream's).
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    name: String,
    uid: String,
    token_hash: String,
    recipients: Vec<String>,
    created_ms: i64,
    keep_days: u32,
    keep_bytes: u64,
    /// The copies its stream was made with (`relay channel add --replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<usize>,
}

impl Stored {
    fn of(channel: &Channel, replicas: usize) -> Stored {
        Stored {
            name: channel.name.clone(),
            uid: channel.uid.clone(),
            token_hash: hex::encode(&channel.token_hash),
            recipients: channel.recipients.clone(),
            created_ms: channel.created_ms,
            keep_days: channel.keep_days,
            keep_bytes: channel.keep_bytes,
            replicas: Some(replicas),
        }
    }

    fn channel(self) -> Channel {
        Channel {
            name: self.name,
            uid: self.uid,
            token_hash: hex::decode(self.token_hash).unwrap_or_default(),
            recipients: self.recipients,
            created_ms: self.created_ms,
            keep_days: self.keep_days,
            keep_bytes: self.keep_bytes,
            last_seq: 0,
            stored_bytes: 0,
            acked_seq: 0,
        }
    }
}

/// What became of a laptop's answer.
pub enum Answered {
    /// The provider's instance took it: the first answer, in time.
    Taken,
    /// No provider waits for it (answered already, or gone).
    NotWaiting,
    /// The cluster failed.
    Failed(RelayStoreError),
}

/// A sealed delivery as a subscriber's stream reads it from the cluster.
pub struct Read {
    /// The delivery, as the SQLite store gives it too.
    pub delivery: crate::relay::store::Sealed,
    /// Deliveries after it, as the cluster counts them now.
    pub pending: u64,
    /// Whether an instance held its provider for an answer (it names an inbox).
    pub held: bool,
}

/// The connection to the cluster, shared by the relay's tasks.
pub struct Jet {
    client: async_nats::Client,
    js: jetstream::Context,
    channels: kv::Store,
    acks: kv::Store,
    replicas: usize,
    instance: String,
    /// Caught-up subscribers per (instance, channel), as said on the presence subject.
    presence: Lock<HashMap<(String, String), (u64, Instant)>>,
    /// Channels whose stream was checked (and said, when it differs).
    checked: Lock<std::collections::HashSet<String>>,
    /// The channels as last listed, with the bucket's sequence number then.
    listed: Lock<Option<(u64, Vec<Channel>)>>,
    /// The replicas each channel's stream was made with, as its entry says.
    chosen: Lock<HashMap<String, usize>>,
}

/// `nats://HOST:PORT[,HOST:PORT…]` as the client takes it (each with its scheme).
pub fn servers(urls: &str) -> Vec<String> {
    urls.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|u| {
            if u.contains("://") {
                u.to_string()
            } else {
                format!("nats://{u}")
            }
        })
        .collect()
}

impl Jet {
    /// Connects to the cluster and opens (making them when missing) the two buckets; streams
    /// are made with `replicas` copies, or 3 when the cluster has 3 servers or more (else 1).
    ///
    /// `api_timeout` bounds each request to JetStream (a publish's acknowledgement included):
    /// short for a relay answering providers, longer for a command.
    pub async fn connect(
        urls: &str,
        replicas: Option<usize>,
        api_timeout: Duration,
    ) -> Result<Jet, RelayStoreError> {
        let servers = servers(urls);
        if servers.is_empty() {
            return Err(RelayStoreError::Cluster(
                "--store nats://HOST:PORT[,HOST:PORT…] names no server".into(),
            ));
        }
        let client = async_nats::ConnectOptions::new()
            .name("hookscope-relay")
            .connection_timeout(Duration::from_secs(3))
            .max_reconnects(None)
            .connect(servers.as_slice())
            .await
            .map_err(|e| failed(&format!("cannot reach the NATS cluster at {urls}"), e))?;
        let info = client.server_info();
        if !info.jetstream {
            return Err(RelayStoreError::Cluster(format!(
                "the NATS server at {urls} runs without JetStream (start it with -js, or jetstream {{}} in its config)"
            )));
        }
        // The servers named, not the client URLs the cluster advertises (one per interface of
        // a server listening on 0.0.0.0).
        let replicas = replicas.unwrap_or(if servers.len() >= 3 { 3 } else { 1 });
        let js = jetstream::ContextBuilder::new()
            .timeout(api_timeout)
            .build(client.clone());
        let channels = bucket(&js, CHANNELS, replicas).await?;
        let acks = bucket(&js, ACKS, replicas).await?;
        let mut instance = [0u8; 8];
        getrandom::fill(&mut instance).map_err(|e| failed("randomness", e))?;
        Ok(Jet {
            client,
            js,
            channels,
            acks,
            replicas,
            instance: hex::encode(instance),
            presence: Lock::new(HashMap::new()),
            checked: Lock::new(Default::default()),
            listed: Lock::new(None),
            chosen: Lock::new(HashMap::new()),
        })
    }

    /// The largest message the cluster takes (its `max_payload`).
    pub fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }

    /// Every channel, by name (without the stream's counters). The bucket is listed again only
    /// when it changed since the last call (one request, where a listing makes a consumer).
    pub async fn channels(&self) -> Result<Vec<Channel>, RelayStoreError> {
        let version = self
            .js
            .get_stream(format!("KV_{CHANNELS}"))
            .await
            .map_err(|e| failed("reading the channels", e))?
            .cached_info()
            .state
            .last_sequence;
        if let Some((at, channels)) = self.listed.lock().as_ref()
            && *at == version
        {
            return Ok(channels.clone());
        }
        let channels = self.list_channels().await?;
        *self.listed.lock() = Some((version, channels.clone()));
        Ok(channels)
    }

    /// The channels, from the bucket's subjects (one request to its stream, where the client's
    /// key listing makes a consumer, which a cluster busy replicating a burst is slow to make).
    /// A removed channel's subject keeps its purge marker: reading it finds no channel.
    async fn list_channels(&self) -> Result<Vec<Channel>, RelayStoreError> {
        let prefix = format!("$KV.{CHANNELS}.");
        let stream = self
            .js
            .get_stream(format!("KV_{CHANNELS}"))
            .await
            .map_err(|e| failed("listing the channels", e))?;
        let mut subjects = stream
            .info_with_subjects(format!("{prefix}>"))
            .await
            .map_err(|e| failed("listing the channels", e))?;
        let mut names = Vec::new();
        while let Some(subject) = subjects.next().await {
            let (subject, _) = subject.map_err(|e| failed("listing the channels", e))?;
            if let Some(name) = subject.strip_prefix(&prefix) {
                names.push(name.to_string());
            }
        }
        names.sort();
        let mut out = Vec::new();
        for name in names {
            if let Some(channel) = self.channel(&name).await? {
                out.push(channel);
            }
        }
        Ok(out)
    }

    /// Every channel with its counters: the newest sequence number, the bytes kept, the newest
    /// acknowledged.
    pub async fn channels_with_counts(&self) -> Result<Vec<Channel>, RelayStoreError> {
        let mut out = self.channels().await?;
        for channel in &mut out {
            let name = stream_name(&channel.name, &channel.uid);
            if let Ok(mut stream) = self.js.get_stream(name).await
                && let Ok(info) = stream.info().await
            {
                channel.last_seq = info.state.last_sequence;
                channel.stored_bytes = info.state.bytes;
            }
            channel.acked_seq = self.acked(channel).await.map_or(0, |(seq, _)| seq);
        }
        Ok(out)
    }

    /// One channel.
    pub async fn channel(&self, name: &str) -> Result<Option<Channel>, RelayStoreError> {
        let value = self
            .channels
            .get(name)
            .await
            .map_err(|e| failed("reading a channel", e))?;
        let Some(bytes) = value else {
            return Ok(None);
        };
        let stored: Stored = serde_json::from_slice(&bytes)
            .map_err(|e| failed(&format!("channel {name}'s entry is not hookscope's"), e))?;
        if let Some(replicas) = stored.replicas {
            self.chosen.lock().insert(stored.name.clone(), replicas);
        }
        Ok(Some(stored.channel()))
    }

    /// Adds a channel, and makes its stream.
    pub async fn add_channel(&self, channel: &Channel) -> Result<(), RelayStoreError> {
        let value = serde_json::to_vec(&Stored::of(channel, self.replicas))
            .map_err(|e| failed("JSON", e))?;
        self.channels
            .create(&channel.name, value.into())
            .await
            .map_err(|e| match e.kind() {
                kv::CreateErrorKind::AlreadyExists => RelayStoreError::Exists(channel.name.clone()),
                _ => failed("adding the channel", e),
            })?;
        // Its stream is its own (named after its uid); when it cannot be made, the entry goes
        // too, so that `channel add` can be run again.
        if let Err(e) = self.ensure_stream(channel).await {
            let _ = self.channels.purge(&channel.name).await;
            return Err(e);
        }
        Ok(())
    }

    /// Changes a channel's token hash or recipients.
    pub async fn update_channel(
        &self,
        name: &str,
        token_hash: &[u8],
        recipients: &[String],
    ) -> Result<(), RelayStoreError> {
        let entry = self
            .channels
            .entry(name)
            .await
            .map_err(|e| failed("reading a channel", e))?
            .filter(|e| e.operation == kv::Operation::Put)
            .ok_or_else(|| RelayStoreError::NoChannel(name.to_string()))?;
        let mut stored: Stored =
            serde_json::from_slice(&entry.value).map_err(|e| failed("the channel's JSON", e))?;
        stored.token_hash = hex::encode(token_hash);
        stored.recipients = recipients.to_vec();
        let value = serde_json::to_vec(&stored).map_err(|e| failed("JSON", e))?;
        self.channels
            .update(name, value.into(), entry.revision)
            .await
            .map_err(|e| failed("changing the channel (try again)", e))?;
        Ok(())
    }

    /// Removes a channel, its stream and its acknowledgement; answers how many deliveries went.
    /// The entry goes first: no instance makes the stream again once it is gone.
    pub async fn remove_channel(&self, name: &str) -> Result<u64, RelayStoreError> {
        let channel = self
            .channel(name)
            .await?
            .ok_or_else(|| RelayStoreError::NoChannel(name.to_string()))?;
        self.channels
            .purge(name)
            .await
            .map_err(|e| failed("removing the channel", e))?;
        let _ = self.acks.purge(name).await;
        let stream = stream_name(&channel.name, &channel.uid);
        let mut dropped = 0;
        match self.js.get_stream(&stream).await {
            Ok(mut found) => {
                dropped = found.info().await.map_or(0, |i| i.state.messages);
                self.js.delete_stream(&stream).await.map_err(|e| {
                    failed(&format!("the channel is removed, but its stream {stream} is not (remove it with `nats stream rm`)"), e)
                })?;
            }
            Err(e) if !is_not_found(&e) => {
                return Err(failed(
                    &format!(
                        "the channel is removed, but its stream {stream} could not be read (remove it with `nats stream rm`)"
                    ),
                    e,
                ));
            }
            Err(_) => {}
        }
        Ok(dropped)
    }

    /// The stream configuration a channel asks for: its replicas as it was made with, else
    /// this relay's.
    fn stream_config(&self, channel: &Channel) -> stream::Config {
        let replicas = (self.chosen.lock().get(&channel.name).copied()).unwrap_or(self.replicas);
        stream::Config {
            name: stream_name(&channel.name, &channel.uid),
            subjects: vec![subject(&channel.name, &channel.uid)],
            storage: stream::StorageType::File,
            num_replicas: replicas,
            max_age: Duration::from_secs(u64::from(channel.keep_days) * 86_400),
            max_bytes: i64::try_from(channel.keep_bytes).unwrap_or(i64::MAX),
            discard: stream::DiscardPolicy::New,
            ..Default::default()
        }
    }

    /// Makes a channel's stream when it has none; when one exists with other settings, says
    /// so (once) and leaves it as it is.
    pub async fn ensure_stream(&self, channel: &Channel) -> Result<(), RelayStoreError> {
        let wanted = self.stream_config(channel);
        match self.js.get_stream(&wanted.name).await {
            Ok(mut found) => {
                let info = found
                    .info()
                    .await
                    .map_err(|e| failed("reading the stream", e))?;
                let differs = differences(&info.config, &wanted);
                let first = self.checked.lock().insert(wanted.name.clone());
                if !differs.is_empty() && first {
                    eprintln!(
                        "relay: stream {} exists with other settings ({}); it is left as it is (change it with `nats stream edit`, or remove the channel and make it again)",
                        wanted.name,
                        differs.join(", ")
                    );
                }
                Ok(())
            }
            Err(e) if is_not_found(&e) => {
                self.js
                    .create_stream(wanted)
                    .await
                    .map_err(|e| failed("making the channel's stream", e))?;
                Ok(())
            }
            Err(e) => Err(failed("reading the stream", e)),
        }
    }

    /// Publishes a sealed delivery; answers its sequence number once a quorum stored it.
    ///
    /// While the stream has no leader (the cluster electing one after a server's loss, 4 to
    /// 9 s for nats-server 2.9) the publish is tried again every [`RETRY_EVERY`] within
    /// [`PATIENCE`] in all, so that the provider waits instead of being refused. Each try
    /// carries the same `Nats-Msg-Id`, so that a try the cluster stored but did not get to
    /// acknowledge is not stored twice (JetStream drops a repeated id within two minutes). A
    /// stream found missing is made (its channel's first delivery on a cluster that could not
    /// make it before); a refusal that no retry can change is answered at once.
    pub async fn publish(
        &self,
        channel: &Channel,
        received_ms: i64,
        size: u64,
        sealed: Vec<u8>,
        reply: Option<&str>,
    ) -> Result<u64, RelayStoreError> {
        use jetstream::context::PublishErrorKind as Kind;
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| failed("randomness", e))?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", hex::encode(id).as_str());
        headers.insert(RECEIVED, received_ms.to_string().as_str());
        headers.insert(SIZE, size.to_string().as_str());
        if let Some(reply) = reply {
            headers.insert(REPLY, reply);
        }
        let payload = axum::body::Bytes::from(sealed);
        let subject = subject(&channel.name, &channel.uid);
        let started = Instant::now();
        loop {
            let left = PATIENCE.saturating_sub(started.elapsed());
            let attempt = async {
                self.js
                    .publish_with_headers(subject.clone(), headers.clone(), payload.clone())
                    .await?
                    .await
            };
            let error = match tokio::time::timeout(left, attempt).await {
                Ok(Ok(ack)) => return Ok(ack.sequence),
                Ok(Err(e)) => e,
                Err(_) => {
                    return Err(failed(
                        "the cluster did not acknowledge the delivery",
                        "no answer in time",
                    ));
                }
            };
            if error.to_string().contains("maximum bytes") {
                return Err(self.over_quota(channel).await);
            }
            if matches!(
                error.kind(),
                Kind::MaxPayloadExceeded | Kind::WrongLastMessageId | Kind::WrongLastSequence
            ) {
                return Err(failed("the cluster refused the delivery", error));
            }
            if error.kind() == Kind::StreamNotFound {
                let _ = self.ensure_stream(channel).await;
            }
            if started.elapsed() + RETRY_EVERY >= PATIENCE {
                return Err(failed(
                    "the cluster did not acknowledge the delivery",
                    error,
                ));
            }
            tokio::time::sleep(RETRY_EVERY).await;
        }
    }

    /// The refusal of a delivery to a full channel, with what its stream holds.
    async fn over_quota(&self, channel: &Channel) -> RelayStoreError {
        let info = match self
            .js
            .get_stream(stream_name(&channel.name, &channel.uid))
            .await
        {
            Ok(mut stream) => stream.info().await.ok().cloned(),
            Err(_) => None,
        };
        RelayStoreError::OverQuota {
            channel: channel.name.clone(),
            stored: info.as_ref().map_or(-1, |i| i.state.bytes as i64),
            quota: info.as_ref().map_or(-1, |i| i.config.max_bytes),
        }
    }

    /// A subscriber's reading of `channel` after `after`, in sequence order, from whichever
    /// server holds the stream; it carries on across the cluster's own fail-overs.
    pub async fn read_after(
        &self,
        channel: &str,
        uid: &str,
        after: u64,
    ) -> Result<
        impl futures_util::Stream<Item = Result<Read, RelayStoreError>> + use<>,
        RelayStoreError,
    > {
        let stream = self
            .js
            .get_stream(stream_name(channel, uid))
            .await
            .map_err(|e| failed("reading the channel's stream", e))?;
        let config = consumer::pull::OrderedConfig {
            deliver_policy: if after == 0 {
                consumer::DeliverPolicy::All
            } else {
                consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: after + 1,
                }
            },
            filter_subject: subject(channel, uid),
            ..Default::default()
        };
        let messages = stream
            .create_consumer(config)
            .await
            .map_err(|e| failed("reading the channel's stream", e))?
            .messages()
            .await
            .map_err(|e| failed("reading the channel's stream", e))?;
        Ok(messages.map(|message| {
            let message = message.map_err(|e| failed("reading the channel's stream", e))?;
            let info = message
                .info()
                .map_err(|e| failed("a delivery's metadata", e))?;
            let (seq, pending) = (info.stream_sequence, info.pending);
            let header = |name: &str| -> Option<i64> {
                message
                    .headers
                    .as_ref()?
                    .get(name)?
                    .as_str()
                    .parse::<i64>()
                    .ok()
            };
            Ok(Read {
                delivery: crate::relay::store::Sealed {
                    seq,
                    received_ms: header(RECEIVED).unwrap_or(0),
                    size: header(SIZE).unwrap_or(0).max(0) as u64,
                    sealed: message.payload.to_vec(),
                },
                pending,
                held: message
                    .headers
                    .as_ref()
                    .is_some_and(|h| h.get(REPLY).is_some()),
            })
        }))
    }

    /// The newest sequence number of a channel's stream (0: none, or no stream).
    pub async fn latest(&self, channel: &str, uid: &str) -> u64 {
        match self.js.get_stream(stream_name(channel, uid)).await {
            Ok(mut stream) => stream.info().await.map_or(0, |i| i.state.last_sequence),
            Err(_) => 0,
        }
    }

    /// An inbox for a provider's instance to take a laptop's answer on.
    pub async fn answers_inbox(&self) -> Result<(String, async_nats::Subscriber), RelayStoreError> {
        let inbox = self.client.new_inbox();
        let subscriber = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| failed("listening for an answer", e))?;
        Ok((inbox, subscriber))
    }

    /// Takes the first answer sent to `subscriber` within `within` (telling its sender it was
    /// taken).
    pub async fn first_answer(
        &self,
        mut subscriber: async_nats::Subscriber,
        within: Duration,
    ) -> Option<Vec<u8>> {
        let message = tokio::time::timeout(within, subscriber.next())
            .await
            .ok()??;
        let _ = subscriber.unsubscribe().await;
        if let Some(reply) = message.reply {
            let _ = self.client.publish(reply, "taken".into()).await;
        }
        Some(message.payload.to_vec())
    }

    /// Sends a laptop's answer for `seq` to the instance holding its provider.
    pub async fn answer(&self, channel: &Channel, seq: u64, answer: Vec<u8>) -> Answered {
        let stream = stream_name(&channel.name, &channel.uid);
        let message = match self.js.get_stream_no_info(&stream).await {
            Ok(stream) => stream.get_raw_message(seq).await,
            Err(e) => return Answered::Failed(failed("reading the delivery", e)),
        };
        let message = match message {
            Ok(message) => message,
            Err(e) if e.kind() == jetstream::stream::RawMessageErrorKind::NoMessageFound => {
                return Answered::NotWaiting;
            }
            Err(e) => return Answered::Failed(failed("reading the delivery", e)),
        };
        let Some(inbox) = message.headers.get(REPLY).map(|v| v.as_str().to_string()) else {
            return Answered::NotWaiting;
        };
        let request = self.client.request(inbox, answer.into());
        match tokio::time::timeout(Duration::from_secs(2), request).await {
            Ok(Ok(reply)) if reply.payload.as_ref() == b"taken" => Answered::Taken,
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
                Answered::NotWaiting
            }
            Ok(Ok(_)) | Err(_) => Answered::NotWaiting,
            Ok(Err(e)) => Answered::Failed(failed("passing the answer on", e)),
        }
    }

    /// Records that a subscriber stored `channel` up to `seq`: never past the stream's newest
    /// delivery, never backwards (compare and swap), and for this incarnation of the channel
    /// only (its uid is kept with it).
    pub async fn ack(&self, channel: &Channel, seq: u64) {
        let seq = seq.min(self.latest(&channel.name, &channel.uid).await);
        for _ in 0..3 {
            let entry = match self.acks.entry(&channel.name).await {
                Ok(entry) => entry.filter(|e| e.operation == kv::Operation::Put),
                Err(_) => return,
            };
            let before = entry
                .as_ref()
                .and_then(|e| parse_ack(&e.value, &channel.uid));
            if before.is_some_and(|(acked, _)| acked >= seq) || seq == 0 {
                return;
            }
            let value = format!("{} {seq} {}", channel.uid, crate::domain::clock::now_ms());
            let written = match &entry {
                Some(entry) => self
                    .acks
                    .update(&channel.name, value.into(), entry.revision)
                    .await
                    .is_ok(),
                None => self.acks.create(&channel.name, value.into()).await.is_ok(),
            };
            if written {
                return;
            }
        }
        eprintln!(
            "relay: an acknowledgement of channel {} was not recorded",
            channel.name
        );
    }

    /// The newest sequence number acknowledged on this incarnation of `channel`, and when.
    async fn acked(&self, channel: &Channel) -> Option<(u64, i64)> {
        let value = self.acks.get(&channel.name).await.ok()??;
        parse_ack(&value, &channel.uid)
    }

    /// Drops deliveries acknowledged and received before `before_ms` (the stream drops those
    /// past the channel's age itself); answers how many went. A channel that fails is said and
    /// passed.
    pub async fn retain(&self, before_ms: i64) -> Result<u64, RelayStoreError> {
        let mut dropped = 0;
        for channel in self.channels().await? {
            let Some((acked, _)) = self.acked(&channel).await else {
                continue;
            };
            let name = stream_name(&channel.name, &channel.uid);
            let Ok(stream) = self.js.get_stream(&name).await else {
                continue;
            };
            let subject = subject(&channel.name, &channel.uid);
            let upto = acked.min(received_before(&stream, &subject, before_ms).await);
            if upto == 0 {
                continue;
            }
            match stream.purge().sequence(upto + 1).await {
                Ok(purged) => dropped += purged.purged,
                Err(e) => {
                    eprintln!("relay: acknowledged deliveries of {name} were not dropped: {e}")
                }
            }
        }
        Ok(dropped)
    }

    /// Says which channels have subscribers caught up on this instance; call every second and
    /// whenever one catches up or goes.
    pub async fn say_present(&self, counts: &[(String, u64)]) {
        for (channel, count) in counts {
            let text = format!("{} {count}", self.instance);
            let _ = self
                .client
                .publish(format!("hookscope.relay.presence.{channel}"), text.into())
                .await;
        }
    }

    /// Listens to the other instances' presence until the connection ends.
    pub async fn hear_presence(&self) {
        let Ok(mut subscriber) = self.client.subscribe("hookscope.relay.presence.>").await else {
            eprintln!("relay: cannot hear which laptops are connected to the other instances");
            return;
        };
        while let Some(message) = subscriber.next().await {
            let channel = message
                .subject
                .strip_prefix("hookscope.relay.presence.")
                .unwrap_or_default()
                .to_string();
            let text = String::from_utf8_lossy(&message.payload).to_string();
            let Some((instance, count)) = text.split_once(' ') else {
                continue;
            };
            let count = count.parse().unwrap_or(0);
            let mut presence = self.presence.lock();
            presence.retain(|_, (_, at)| at.elapsed() < PRESENCE_FOR);
            presence.insert((instance.to_string(), channel), (count, Instant::now()));
        }
    }

    /// Whether a subscriber of `channel` is caught up on any instance (said within the last
    /// few seconds).
    pub fn present(&self, channel: &str) -> bool {
        let presence = self.presence.lock();
        presence
            .iter()
            .any(|((_, c), (count, at))| c == channel && *count > 0 && at.elapsed() < PRESENCE_FOR)
    }
}

/// An acknowledgement as kept: `UID SEQ MS`; `None` for another incarnation's.
fn parse_ack(value: &[u8], uid: &str) -> Option<(u64, i64)> {
    let text = std::str::from_utf8(value).ok()?;
    let mut parts = text.split(' ');
    (parts.next()? == uid).then_some(())?;
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether the stream asked for does not exist (rather than the cluster failing to say).
fn is_not_found(e: &jetstream::context::GetStreamError) -> bool {
    matches!(e.kind(), jetstream::context::GetStreamErrorKind::JetStream(ref js)
        if js.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND)
}

/// Opens a key-value bucket, making it when missing. Its stream is made as the client's own
/// `create_key_value` makes it, without that call's account query, whose answer Debian's
/// nats-server (2.9) words in a way the client no longer reads.
async fn bucket(
    js: &jetstream::Context,
    name: &str,
    replicas: usize,
) -> Result<kv::Store, RelayStoreError> {
    if let Ok(store) = js.get_key_value(name).await {
        return Ok(store);
    }
    let config = stream::Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        storage: stream::StorageType::File,
        num_replicas: replicas,
        discard: stream::DiscardPolicy::New,
        allow_rollup: true,
        deny_delete: true,
        // Read from the leader: a lagging follower's answer could be cached as the current
        // channels (a rotated token still taken, a recipient not added).
        allow_direct: false,
        ..Default::default()
    };
    let made = js.create_stream(config).await;
    // Another instance may have made it at the same moment.
    match js.get_key_value(name).await {
        Ok(store) => Ok(store),
        Err(e) => Err(match made {
            Err(made) => failed(&format!("making the key-value bucket {name}"), made),
            Ok(_) => failed(&format!("opening the key-value bucket {name}"), e),
        }),
    }
}

/// What differs between a stream's settings and the ones hookscope asks for.
fn differences(found: &stream::Config, wanted: &stream::Config) -> Vec<String> {
    let mut out = Vec::new();
    if found.num_replicas != wanted.num_replicas {
        out.push(format!(
            "{} replicas, not {}",
            found.num_replicas, wanted.num_replicas
        ));
    }
    if found.subjects != wanted.subjects {
        out.push(format!("subjects {:?}", found.subjects));
    }
    if found.max_age != wanted.max_age {
        out.push(format!(
            "max_age {} s, not {} s",
            found.max_age.as_secs(),
            wanted.max_age.as_secs()
        ));
    }
    if found.max_bytes != wanted.max_bytes {
        out.push(format!(
            "max_bytes {}, not {}",
            found.max_bytes, wanted.max_bytes
        ));
    }
    if found.discard != wanted.discard {
        out.push("discard old, not new".to_string());
    }
    if found.storage != wanted.storage {
        out.push("memory storage, not file".to_string());
    }
    out
}

/// The newest sequence number received before `ms` (0: none), by bisection over the stream's
/// sequence numbers (its times follow them).
async fn received_before(stream: &jetstream::stream::Stream, subject: &str, ms: i64) -> u64 {
    let at_or_after = |seq: u64| async move {
        let message = stream
            .raw_message_builder()
            .sequence(seq)
            .next_by_subject(subject)
            .send()
            .await
            .ok()?;
        let at = (message.time.unix_timestamp_nanos() / 1_000_000) as i64;
        Some((message.sequence, at))
    };
    let Ok(info) = stream.get_info().await else {
        return 0;
    };
    let (mut lo, mut hi) = (info.state.first_sequence, info.state.last_sequence);
    if lo == 0 || at_or_after(lo).await.is_none_or(|(_, at)| at >= ms) {
        return 0;
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match at_or_after(mid).await {
            Some((seq, at)) if at < ms => lo = seq,
            _ => hi = mid - 1,
        }
    }
    lo
}
