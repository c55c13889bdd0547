//! Ed25519 keys as webhook senders write them, and the two operations on them.
//!
//! Standard Webhooks writes a public key as `whpk_` and the base64 of its 32 bytes, and a secret
//! key as `whsk_` and the base64 of the 32-byte seed (or of libsodium's 64-byte seed-then-public
//! layout). Discord writes an application's public key as 64 hex digits; a 128-hex-digit
//! libsodium secret key signs for tests. The arithmetic is ring's, the one rustls already uses.

use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};

/// An ed25519 public key: verifies only.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey(pub [u8; 32]);

/// An ed25519 signing key: its seed and the public key derived from it.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    seed: [u8; 32],
    public: PublicKey,
}

impl PublicKey {
    /// A public key from its 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<PublicKey> {
        bytes.try_into().ok().map(PublicKey)
    }

    /// Whether `signature` is this key's signature of `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        signature.len() == 64
            && UnparsedPublicKey::new(&ED25519, &self.0)
                .verify(message, signature)
                .is_ok()
    }
}

impl SigningKey {
    /// A signing key from a 32-byte seed, or from libsodium's 64 bytes (seed, then the public
    /// key, which must be the seed's own).
    pub fn from_bytes(bytes: &[u8]) -> Option<SigningKey> {
        let seed: [u8; 32] = bytes.get(..32)?.try_into().ok()?;
        if bytes.len() != 32 && bytes.len() != 64 {
            return None;
        }
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).ok()?;
        let public = PublicKey::from_bytes(pair.public_key().as_ref())?;
        if bytes.len() == 64 && bytes[32..] != public.0 {
            return None;
        }
        Some(SigningKey { seed, public })
    }

    /// The public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The 64-byte signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match Ed25519KeyPair::from_seed_unchecked(&self.seed) {
            Ok(pair) => pair.sign(message).as_ref().to_vec(),
            // The seed was accepted when the key was built; ring does not reject it later.
            Err(_) => Vec::new(),
        }
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", hex::encode(self.0))
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(redacted)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032, section 7.1, TEST 1: the empty message.
    #[test]
    fn rfc_8032_test_1() {
        let seed = hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .expect("hex");
        let public =
            hex::decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
                .expect("hex");
        let signature = hex::decode(concat!(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555",
            "fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ))
        .expect("hex");
        let key = SigningKey::from_bytes(&seed).expect("seed");
        assert_eq!(key.public().0.as_slice(), public.as_slice());
        assert_eq!(key.sign(b""), signature);
        let public = PublicKey::from_bytes(&public).expect("public");
        assert!(public.verifies(b"", &signature));
        assert!(!public.verifies(b"x", &signature));
        let mut libsodium = seed.clone();
        libsodium.extend_from_slice(&public.0);
        assert!(SigningKey::from_bytes(&libsodium).is_some());
        libsodium[40] ^= 1;
        assert!(
            SigningKey::from_bytes(&libsodium).is_none(),
            "a 64-byte key whose public half is not the seed's is refused"
        );
    }
}
