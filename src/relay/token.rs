//! Subscriber tokens and channel names: a token is 32 random bytes, shown once, kept as its
//! SHA-256 and compared in constant time.

use base64::Engine as _;
use sha2::Digest as _;
use subtle::ConstantTimeEq as _;

/// What every token starts with, so a leaked one is recognisable.
const PREFIX: &str = "hsr_";

/// A new token, and the hash the relay keeps.
pub fn generate() -> (String, Vec<u8>) {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random generator");
    let token = format!(
        "{PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = hash(&token);
    (token, hash)
}

/// The hash kept for `token`.
pub fn hash(token: &str) -> Vec<u8> {
    sha2::Sha256::digest(token.as_bytes()).to_vec()
}

/// Whether `token` is the one `hash` was made from (in constant time).
pub fn matches(token: &str, hash: &[u8]) -> bool {
    !token.is_empty() && bool::from(self::hash(token).ct_eq(hash))
}

/// Refuses a channel name that is not `[a-z0-9-]{1,64}`.
pub fn check_channel_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a channel name: use 1 to 64 of a-z, 0-9 and -"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_its_hash_only() {
        let (token, hash) = generate();
        assert!(token.starts_with("hsr_") && token.len() == 4 + 43);
        assert!(matches(&token, &hash));
        assert!(!matches(&generate().0, &hash));
        assert!(!matches("", &hash));
    }

    #[test]
    fn channel_names() {
        assert!(check_channel_name("team-a1").is_ok());
        for bad in ["", "Team", "a_b", "a/b", &"a".repeat(65)] {
            assert!(check_channel_name(bad).is_err(), "{bad}");
        }
    }
}
