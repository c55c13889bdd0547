//! Sealing a relayed delivery so that only its channel's recipients can open it: each sealed
//! delivery is an age file (age-encryption.org/v1, X25519 recipients), which `age -d -i KEY`
//! opens as well as hookscope does.
//!
//! An X25519 exchange per recipient costs about 0.1 ms, so the relay does not make one per
//! delivery. A [`Sealer`] draws a file key and writes the age header that wraps it to the
//! recipients once per [`EPOCH`]; each delivery of that minute is that header, a nonce of its
//! own and its payload, encrypted under a key derived from the file key and the nonce (the age
//! format's own derivation). After its minute the file key is dropped and zeroed (age's
//! `FileKey` wipes itself), and [`Sealer::expire`] drops it on time even when nothing arrives:
//! a copy of the relay's data dir holds no key that opens what it stores.
//!
//! Opening is the age crate's own decryption ([`open`]).

use std::io::Read as _;
use std::time::{Duration, Instant};

use age_core::format::{FILE_KEY_BYTES, FileKey};
use age_core::secrecy::ExposeSecret as _;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead as _, KeyInit as _};
use hmac::{KeyInit as _, Mac as _};

/// How long one file key seals deliveries.
pub const EPOCH: Duration = Duration::from_secs(60);

/// The age format's payload chunk.
const CHUNK: usize = 64 * 1024;

/// Errors sealing or opening.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// A recipient is not an age X25519 public key.
    #[error("{0:?} is not a relay key (an age X25519 public key, age1…): {1}")]
    BadRecipient(String, String),
    /// No recipient: nobody could open what would be sealed.
    #[error("a channel needs at least one recipient key")]
    NoRecipient,
    /// The bytes are sealed, but not to this laptop's key.
    #[error("sealed to another recipient: this laptop's key cannot open it")]
    NotForThisKey,
    /// The bytes are not an age file, or were changed.
    #[error("not a sealed delivery: {0}")]
    Damaged(String),
    /// The identity file cannot be read.
    #[error("the relay key is not an age identity (AGE-SECRET-KEY-1…)")]
    BadIdentity,
}

/// Parses recipient keys (`age1…`), refusing an empty list.
pub fn recipients(keys: &[String]) -> Result<Vec<age::x25519::Recipient>, SealError> {
    if keys.is_empty() {
        return Err(SealError::NoRecipient);
    }
    keys.iter()
        .map(|key| {
            key.trim()
                .parse::<age::x25519::Recipient>()
                .map_err(|e| SealError::BadRecipient(key.clone(), e.to_string()))
        })
        .collect()
}

/// The file key and header of the current minute.
struct Epoch {
    started: Instant,
    file_key: FileKey,
    header: Vec<u8>,
}

/// Seals deliveries to a fixed set of recipients, with one file key per [`EPOCH`].
pub struct Sealer {
    recipients: Vec<age::x25519::Recipient>,
    epoch: Option<Epoch>,
}

impl Sealer {
    /// A sealer for `recipients` (at least one).
    pub fn new(recipients: Vec<age::x25519::Recipient>) -> Result<Sealer, SealError> {
        if recipients.is_empty() {
            return Err(SealError::NoRecipient);
        }
        Ok(Sealer {
            recipients,
            epoch: None,
        })
    }

    /// Seals `plaintext`: an age file only the recipients can open.
    pub fn seal(&mut self, plaintext: &[u8]) -> Vec<u8> {
        self.expire();
        let epoch = match &mut self.epoch {
            Some(epoch) => epoch,
            slot => slot.insert(new_epoch(&self.recipients)),
        };
        let mut nonce = [0u8; 16];
        fill_random(&mut nonce);
        let key = age_core::primitives::hkdf(&nonce, b"payload", epoch.file_key.expose_secret());
        let mut out = Vec::with_capacity(epoch.header.len() + 16 + plaintext.len() + 64);
        out.extend_from_slice(&epoch.header);
        out.extend_from_slice(&nonce);
        stream_encrypt(&key, plaintext, &mut out);
        out
    }

    /// Drops the file key once its minute is over (and with it every way to open what it
    /// sealed, but the recipients' own keys).
    pub fn expire(&mut self) {
        if self
            .epoch
            .as_ref()
            .is_some_and(|e| e.started.elapsed() >= EPOCH)
        {
            self.epoch = None;
        }
    }

    /// Whether a file key is held now.
    pub fn holds_key(&self) -> bool {
        self.epoch.is_some()
    }
}

/// A new file key, and the age header that wraps it to each recipient.
fn new_epoch(recipients: &[age::x25519::Recipient]) -> Epoch {
    let file_key = FileKey::init_with_mut(|key: &mut [u8; FILE_KEY_BYTES]| fill_random(key));
    let mut header = b"age-encryption.org/v1\n".to_vec();
    for recipient in recipients {
        // X25519 wrapping cannot fail.
        if let Ok((stanzas, _)) = age::Recipient::wrap_file_key(recipient, &file_key) {
            for stanza in stanzas {
                write_stanza(&mut header, &stanza);
            }
        }
    }
    header.extend_from_slice(b"---");
    let mac_key = age_core::primitives::hkdf(&[], b"header", file_key.expose_secret());
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&mac_key)
        .expect("HMAC takes a key of any length");
    mac.update(&header);
    let tag = mac.finalize().into_bytes();
    header.push(b' ');
    header.extend_from_slice(
        base64::engine::general_purpose::STANDARD_NO_PAD
            .encode(tag)
            .as_bytes(),
    );
    header.push(b'\n');
    Epoch {
        started: Instant::now(),
        file_key,
        header,
    }
}

/// A stanza as the age format writes it: `-> tag args…`, then the body in base64 lines of 64
/// columns, the last one shorter (empty when the body fills its lines).
fn write_stanza(out: &mut Vec<u8>, stanza: &age_core::format::Stanza) {
    out.extend_from_slice(b"-> ");
    out.extend_from_slice(stanza.tag.as_bytes());
    for arg in &stanza.args {
        out.push(b' ');
        out.extend_from_slice(arg.as_bytes());
    }
    out.push(b'\n');
    let body = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&stanza.body);
    let mut lines = body.as_bytes().chunks(64).peekable();
    let mut last_full = true;
    while let Some(line) = lines.next() {
        out.extend_from_slice(line);
        out.push(b'\n');
        if lines.peek().is_none() {
            last_full = line.len() == 64;
        }
    }
    if last_full {
        out.push(b'\n');
    }
}

/// The age payload: ChaCha20-Poly1305 over 64 KiB chunks, the nonce an 11-byte counter and a
/// last-chunk flag.
fn stream_encrypt(key: &[u8; 32], plaintext: &[u8], out: &mut Vec<u8>) {
    let cipher = chacha20poly1305::ChaCha20Poly1305::new(key.into());
    let chunks: Vec<&[u8]> = if plaintext.is_empty() {
        vec![&[]]
    } else {
        plaintext.chunks(CHUNK).collect()
    };
    let last = chunks.len() - 1;
    for (counter, chunk) in chunks.into_iter().enumerate() {
        let mut nonce = [0u8; 12];
        nonce[3..11].copy_from_slice(&(counter as u64).to_be_bytes());
        nonce[11] = u8::from(counter == last);
        let sealed = cipher
            .encrypt(&nonce.into(), chunk)
            .expect("a 64 KiB chunk is within ChaCha20's limits");
        out.extend_from_slice(&sealed);
    }
}

fn fill_random(buf: &mut [u8]) {
    // The OS's generator; failing it, nothing may be sealed with a guessable key.
    getrandom::fill(buf).expect("the operating system's random generator");
}

/// An age file cut after its header (the line `--- MAC`): the header, the same for every
/// delivery sealed in one minute, and the rest (nonce and payload). `None` for bytes with no
/// header.
pub fn split_header(sealed: &[u8]) -> Option<(&[u8], &[u8])> {
    let mac_line = sealed.windows(4).position(|w| w == b"\n---")? + 1;
    let end = mac_line + sealed[mac_line..].iter().position(|&b| b == b'\n')? + 1;
    Some(sealed.split_at(end))
}

/// A laptop's relay key: the age identity that opens what is sealed to its recipient.
pub struct Identity(age::x25519::Identity);

impl Identity {
    /// A new key.
    pub fn generate() -> Identity {
        Identity(age::x25519::Identity::generate())
    }

    /// Reads an identity file (age's format: comments, then `AGE-SECRET-KEY-1…`).
    pub fn parse(text: &str) -> Result<Identity, SealError> {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .and_then(|l| l.parse::<age::x25519::Identity>().ok())
            .map(Identity)
            .ok_or(SealError::BadIdentity)
    }

    /// The identity file's text (secret: written with mode 0600, never printed).
    pub fn to_file_text(&self, recipient_comment: bool) -> String {
        let secret = self.0.to_string();
        let mut text = String::new();
        if recipient_comment {
            text.push_str(&format!(
                "# hookscope relay key\n# public key: {}\n",
                self.recipient()
            ));
        }
        text.push_str(secret.expose_secret());
        text.push('\n');
        text
    }

    /// The public key a channel seals to (`age1…`).
    pub fn recipient(&self) -> String {
        self.0.to_public().to_string()
    }

    /// Opens a sealed delivery.
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        open(&self.0, sealed)
    }
}

/// Opens an age file with `identity`, through the age crate.
fn open(identity: &age::x25519::Identity, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    let decryptor =
        age::Decryptor::new_buffered(sealed).map_err(|e| SealError::Damaged(e.to_string()))?;
    let mut reader = decryptor
        .decrypt(std::iter::once(identity as &dyn age::Identity))
        .map_err(|e| match e {
            age::DecryptError::NoMatchingKeys => SealError::NotForThisKey,
            e => SealError::Damaged(e.to_string()),
        })?;
    let mut plaintext = Vec::new();
    reader
        .read_to_end(&mut plaintext)
        .map_err(|e| SealError::Damaged(e.to_string()))?;
    Ok(plaintext)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer_for(ids: &[&Identity]) -> Sealer {
        let keys: Vec<String> = ids.iter().map(|i| i.recipient()).collect();
        Sealer::new(recipients(&keys).expect("keys")).expect("sealer")
    }

    /// Bodies around the chunk boundaries open byte-exact with the age crate, for each
    /// recipient, while one header serves the whole minute.
    #[test]
    fn every_recipient_opens_what_was_sealed_at_every_size() {
        let (a, b) = (Identity::generate(), Identity::generate());
        let mut sealer = sealer_for(&[&a, &b]);
        for size in [
            0,
            1,
            1000,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            2 * CHUNK,
            3 * CHUNK + 7,
        ] {
            let plaintext: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let sealed = sealer.seal(&plaintext);
            assert_eq!(a.open(&sealed).expect("a opens"), plaintext, "size {size}");
            assert_eq!(b.open(&sealed).expect("b opens"), plaintext, "size {size}");
        }
    }

    /// Two deliveries of one minute share the header but not the payload key: the same
    /// plaintext seals to different bytes.
    #[test]
    fn one_header_per_minute_and_one_nonce_per_delivery() {
        let a = Identity::generate();
        let mut sealer = sealer_for(&[&a]);
        let (one, two) = (sealer.seal(b"same"), sealer.seal(b"same"));
        let header_end = one.windows(4).position(|w| w == b"\n---").expect("header") + 1;
        assert_eq!(one[..header_end], two[..header_end]);
        assert_ne!(one, two);
    }

    #[test]
    fn a_sealed_delivery_is_its_header_then_the_rest() {
        let a = Identity::generate();
        let mut sealer = sealer_for(&[&a]);
        let (one, two) = (sealer.seal(b"first"), sealer.seal(b"second"));
        let (header, rest) = split_header(&one).expect("a header");
        assert!(header.starts_with(b"age-encryption.org/v1\n") && header.ends_with(b"\n"));
        assert_eq!(
            split_header(&two).expect("a header").0,
            header,
            "one header a minute"
        );
        assert_eq!(rest.len(), 16 + 5 + 16, "nonce, payload, tag");
        assert!(split_header(b"no header").is_none());
    }

    #[test]
    fn another_key_cannot_open_it_and_says_so() {
        let (a, other) = (Identity::generate(), Identity::generate());
        let sealed = sealer_for(&[&a]).seal(b"secret");
        assert!(matches!(other.open(&sealed), Err(SealError::NotForThisKey)));
        let mut changed = sealed.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(matches!(a.open(&changed), Err(SealError::Damaged(_))));
    }

    #[test]
    fn the_file_key_is_dropped_after_its_minute() {
        let a = Identity::generate();
        let mut sealer = sealer_for(&[&a]);
        sealer.seal(b"x");
        assert!(sealer.holds_key());
        if let Some(epoch) = &mut sealer.epoch {
            epoch.started -= EPOCH;
        }
        sealer.expire();
        assert!(!sealer.holds_key());
    }

    #[test]
    fn identity_files_round_trip_and_bad_keys_are_refused() {
        let a = Identity::generate();
        let back = Identity::parse(&a.to_file_text(true)).expect("parses");
        assert_eq!(back.recipient(), a.recipient());
        assert!(Identity::parse("nonsense").is_err());
        assert!(matches!(
            recipients(&["age1nope".into()]),
            Err(SealError::BadRecipient(..))
        ));
        assert!(matches!(recipients(&[]), Err(SealError::NoRecipient)));
    }
}
