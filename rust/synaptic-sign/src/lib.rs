//! `synaptic-sign`: signed model containers on the host, with the keys
//! MCUboot's `imgtool` makes.
//!
//! * [`Key::from_pem`] reads what `imgtool keygen -t ed25519` and
//!   `imgtool keygen -t ecdsa-p256` write (an unencrypted PKCS#8
//!   `PRIVATE KEY`) and what `imgtool getpub -e pem` writes (a
//!   SubjectPublicKeyInfo `PUBLIC KEY`); [`keygen`] and [`Key::to_pem`]
//!   write the same forms, so `imgtool` reads our keys.
//! * [`sign`] turns a format-1 or format-2 container into a format-2 one:
//!   the header re-encoded with `signed` set, a new
//!   [`SignatureBlock`], the
//!   payload. Re-signing drops the old block.
//! * [`verify`] checks a container with the device's own code path,
//!   [`synaptic_store::container::check`], under a
//!   [`Trust`] built from the keys given.
//!
//! The block records the payload's SHA-256, and what is signed is
//! [`signed_digest`]: the SHA-256
//! of the header's 96 bytes and that payload digest, as MCUboot signs an
//! image's hash. Ed25519 signs those 32 bytes as its message; ECDSA P-256
//! signs with them as the prehash, and the signature is `r || s`, 64 bytes.
//!
//! Limits: encrypted keys (`imgtool keygen -p`) are refused (decrypt them
//! with `openssl pkcs8`), as are RSA, curves other than P-256, and SEC1
//! `EC PRIVATE KEY` files. A PKCS#8 v2 key (the public key beside the
//! private one, as OpenSSL 3 may write Ed25519) is read, and refused if the
//! two do not match.
//!
//! # Examples
//!
//! ```
//! use synaptic_sign::{keygen, sign, verify, Algorithm};
//! use synaptic_store::{Header, StoreError, TensorShape};
//!
//! let payload = b"a .tflite";
//! let shape = TensorShape::int8(&[1, 4]);
//! let mut container = Header::new("kws", 1, payload, shape, shape).unwrap().encode().to_vec();
//! container.extend_from_slice(payload);
//!
//! let key = keygen(Algorithm::Ed25519)?;
//! let signed = sign(&container, &key)?;
//! assert!(verify(&signed, &[key.public_key()], true).unwrap().signed);
//! assert_eq!(verify(&container, &[key], true), Err(StoreError::Unsigned));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

use std::fmt;

use ed25519_dalek::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};
use p256::pkcs8::der::pem;
use p256::pkcs8::{
    DecodePublicKey as _, EncodePublicKey as _, LineEnding, ObjectIdentifier, PrivateKeyInfoRef,
    SubjectPublicKeyInfoRef,
};
use synaptic_store::container::check;
use synaptic_store::signature::{sha256, signed_digest, PublicKey, SignatureBlock, Trust};
use synaptic_store::{Header, StoreError, HEADER_LEN};

pub use synaptic_store::signature::{Algorithm, SIGNATURE_LEN};

const OID_ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const OID_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const OID_P521: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");
const OID_SECP256K1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.10");

/// Why a key could not be read or made, or a container not signed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignError {
    /// Not a PEM document.
    NotPem,
    /// An encrypted private key (`imgtool keygen -p`, `ENCRYPTED PRIVATE
    /// KEY`): decrypt it first (`openssl pkcs8 -in KEY -out PLAIN`).
    Encrypted,
    /// A key of a kind the store cannot verify (RSA, another curve, another
    /// PEM type); the text says which.
    Unsupported(String),
    /// A `PRIVATE KEY` or `PUBLIC KEY` whose contents do not decode; the
    /// decoder's reason.
    Malformed(String),
    /// Signing needs the private key; this one is public only.
    PublicOnly,
    /// The container to sign is refused by the store's own check (as it
    /// is, before signing: a bad header, a wrong length or payload CRC, a
    /// signed container whose digest does not match).
    Container(StoreError),
    /// The operating system gave no random numbers for a new key.
    Random(String),
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::NotPem => write!(f, "not a PEM key file"),
            SignError::Encrypted => write!(
                f,
                "an encrypted private key: decrypt it first (openssl pkcs8 -in KEY -out PLAIN.pem)"
            ),
            SignError::Unsupported(what) => write!(
                f,
                "{what}: the store verifies Ed25519 and ECDSA P-256 keys only"
            ),
            SignError::Malformed(why) => write!(f, "a malformed key: {why}"),
            SignError::PublicOnly => write!(f, "a public key cannot sign (give the private key)"),
            SignError::Container(e) => write!(f, "not a container that can be signed: {e:?}"),
            SignError::Random(why) => write!(f, "no random numbers for a key: {why}"),
        }
    }
}

impl std::error::Error for SignError {}

/// A signing key (private, with its public half) or a public key, of one
/// of the [`Algorithm`]s the store verifies.
#[derive(Clone)]
pub struct Key(Inner);

#[derive(Clone)]
enum Inner {
    Ed25519(ed25519_dalek::SigningKey),
    Ed25519Public(ed25519_dalek::VerifyingKey),
    P256(p256::ecdsa::SigningKey),
    P256Public(p256::ecdsa::VerifyingKey),
}

impl fmt::Debug for Key {
    /// The algorithm, whether private and the key id; never the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("algorithm", &self.algorithm())
            .field("private", &self.is_private())
            .field("key_id", &hex(&self.key_id()))
            .finish()
    }
}

impl PartialEq for Key {
    /// The same algorithm and public key, and both private or both public.
    fn eq(&self, other: &Key) -> bool {
        self.algorithm() == other.algorithm()
            && self.is_private() == other.is_private()
            && self.public_bytes() == other.public_bytes()
    }
}

impl Eq for Key {}

impl Key {
    /// Read a PEM key: a PKCS#8 `PRIVATE KEY` (`imgtool keygen`) or a
    /// SubjectPublicKeyInfo `PUBLIC KEY` (`imgtool getpub -e pem`), Ed25519
    /// or ECDSA P-256. Leading and trailing whitespace is ignored.
    ///
    /// # Errors
    ///
    /// [`SignError::NotPem`] for anything but one PEM document;
    /// [`SignError::Encrypted`] for an encrypted key;
    /// [`SignError::Unsupported`] for RSA, other curves and other PEM
    /// types; [`SignError::Malformed`] when the DER inside does not decode.
    pub fn from_pem(text: &str) -> Result<Key, SignError> {
        let text = text.trim();
        let (label, der) = match pem::decode_vec(text.as_bytes()) {
            Ok(decoded) => decoded,
            // A traditional OpenSSL encrypted key (`Proc-Type: 4,ENCRYPTED`
            // headers, which RFC 7468 PEM does not allow).
            Err(_) if text.contains("ENCRYPTED") => return Err(SignError::Encrypted),
            Err(_) => return Err(SignError::NotPem),
        };
        match label {
            "PRIVATE KEY" => private_key(&der),
            "PUBLIC KEY" => public_key(&der),
            "ENCRYPTED PRIVATE KEY" => Err(SignError::Encrypted),
            "RSA PRIVATE KEY" | "RSA PUBLIC KEY" => Err(SignError::Unsupported("an RSA key".into())),
            "EC PRIVATE KEY" => Err(SignError::Unsupported(
                "a SEC1 EC PRIVATE KEY (imgtool writes PKCS#8: openssl pkcs8 -topk8 -nocrypt converts)"
                    .into(),
            )),
            other => Err(SignError::Unsupported(format!("a PEM {other:?}"))),
        }
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self.0 {
            Inner::Ed25519(_) | Inner::Ed25519Public(_) => Algorithm::Ed25519,
            Inner::P256(_) | Inner::P256Public(_) => Algorithm::EcdsaP256,
        }
    }

    /// Whether it holds the private key (and can sign).
    pub fn is_private(&self) -> bool {
        matches!(self.0, Inner::Ed25519(_) | Inner::P256(_))
    }

    /// The public half.
    pub fn public_key(&self) -> Key {
        Key(match &self.0 {
            Inner::Ed25519(k) => Inner::Ed25519Public(k.verifying_key()),
            Inner::P256(k) => Inner::P256Public(*k.verifying_key()),
            public => public.clone(),
        })
    }

    /// The raw public key as the store holds it and names it: Ed25519's 32
    /// bytes, P-256's 65-byte uncompressed SEC1 point (`0x04 || x || y`).
    pub fn public_bytes(&self) -> Vec<u8> {
        match &self.0 {
            Inner::Ed25519(k) => k.verifying_key().to_bytes().to_vec(),
            Inner::Ed25519Public(k) => k.to_bytes().to_vec(),
            Inner::P256(k) => k.verifying_key().to_sec1_point(false).as_bytes().to_vec(),
            Inner::P256Public(k) => k.to_sec1_point(false).as_bytes().to_vec(),
        }
    }

    /// The key id a signature block names the key by: the SHA-256 of
    /// [`public_bytes`](Self::public_bytes).
    pub fn key_id(&self) -> [u8; 32] {
        sha256(&self.public_bytes())
    }

    /// The key as PEM, in the form `imgtool` writes: a private key as an
    /// unencrypted PKCS#8 v1 `PRIVATE KEY` (P-256's ECPrivateKey inside
    /// with its public point and without curve parameters), a public key
    /// as a SubjectPublicKeyInfo `PUBLIC KEY`; 64-character lines, `\n`.
    pub fn to_pem(&self) -> String {
        let encoded = match &self.0 {
            // PKCS#8 v1, the seed alone, as imgtool writes it (dalek's own
            // encoding is v2, with the public key beside the seed).
            Inner::Ed25519(k) => ed25519_dalek::pkcs8::KeypairBytes {
                secret_key: k.to_bytes(),
                public_key: None,
            }
            .to_pkcs8_pem(LineEnding::LF)
            .map(|p| p.to_string()),
            Inner::P256(k) => k.to_pkcs8_pem(LineEnding::LF).map(|p| p.to_string()),
            Inner::Ed25519Public(k) => k.to_public_key_pem(LineEnding::LF).map_err(Into::into),
            Inner::P256Public(k) => k.to_public_key_pem(LineEnding::LF).map_err(Into::into),
        };
        // Encoding a key that decoded or was made here has no failure
        // case (the DER is a few fixed-size fields).
        encoded.expect("a valid key encodes as PEM")
    }

    /// The store's view of the public key.
    fn store_key<'k>(&self, bytes: &'k [u8]) -> PublicKey<'k> {
        PublicKey {
            algorithm: self.algorithm(),
            bytes,
        }
    }

    /// The 64-byte signature of `digest`.
    fn sign_digest(&self, digest: &[u8; 32]) -> Result<[u8; 64], SignError> {
        match &self.0 {
            Inner::Ed25519(k) => {
                use ed25519_dalek::Signer as _;
                Ok(k.sign(digest).to_bytes())
            }
            Inner::P256(k) => {
                use p256::ecdsa::signature::hazmat::PrehashSigner as _;
                let signature: p256::ecdsa::Signature = k
                    .sign_prehash(digest)
                    .map_err(|e| SignError::Malformed(e.to_string()))?;
                let mut out = [0u8; 64];
                out.copy_from_slice(&signature.to_bytes());
                Ok(out)
            }
            Inner::Ed25519Public(_) | Inner::P256Public(_) => Err(SignError::PublicOnly),
        }
    }
}

/// The curve named by an `id-ecPublicKey` algorithm's parameters, or why not P-256.
fn require_p256(parameters: Result<ObjectIdentifier, impl fmt::Display>) -> Result<(), SignError> {
    match parameters {
        Ok(OID_P256) => Ok(()),
        Ok(OID_P384) => Err(SignError::Unsupported("an ECDSA P-384 key".into())),
        Ok(OID_P521) => Err(SignError::Unsupported("an ECDSA P-521 key".into())),
        Ok(OID_SECP256K1) => Err(SignError::Unsupported("an ECDSA secp256k1 key".into())),
        Ok(other) => Err(SignError::Unsupported(format!(
            "an elliptic-curve key on curve {other}"
        ))),
        Err(e) => Err(SignError::Malformed(format!("no named curve: {e}"))),
    }
}

fn other_algorithm(oid: ObjectIdentifier) -> SignError {
    if oid == OID_RSA {
        SignError::Unsupported("an RSA key".into())
    } else {
        SignError::Unsupported(format!("a key of algorithm {oid}"))
    }
}

fn private_key(der: &[u8]) -> Result<Key, SignError> {
    let malformed = |e: &dyn fmt::Display| SignError::Malformed(e.to_string());
    let info = PrivateKeyInfoRef::try_from(der).map_err(|e| malformed(&e))?;
    match info.algorithm.oid {
        OID_ED25519 => ed25519_dalek::SigningKey::from_pkcs8_der(der)
            .map(|k| Key(Inner::Ed25519(k)))
            .map_err(|e| malformed(&e)),
        OID_EC_PUBLIC_KEY => {
            require_p256(info.algorithm.parameters_oid())?;
            p256::ecdsa::SigningKey::from_pkcs8_der(der)
                .map(|k| Key(Inner::P256(k)))
                .map_err(|e| malformed(&e))
        }
        oid => Err(other_algorithm(oid)),
    }
}

fn public_key(der: &[u8]) -> Result<Key, SignError> {
    let malformed = |e: &dyn fmt::Display| SignError::Malformed(e.to_string());
    let info = SubjectPublicKeyInfoRef::try_from(der).map_err(|e| malformed(&e))?;
    match info.algorithm.oid {
        OID_ED25519 => ed25519_dalek::VerifyingKey::from_public_key_der(der)
            .map(|k| Key(Inner::Ed25519Public(k)))
            .map_err(|e| malformed(&e)),
        OID_EC_PUBLIC_KEY => {
            require_p256(info.algorithm.parameters_oid())?;
            p256::ecdsa::VerifyingKey::from_public_key_der(der)
                .map(|k| Key(Inner::P256Public(k)))
                .map_err(|e| malformed(&e))
        }
        oid => Err(other_algorithm(oid)),
    }
}

/// A new private key of `algorithm` from the operating system's random
/// numbers.
///
/// # Errors
///
/// [`SignError::Random`] when the operating system gives none.
///
/// # Examples
///
/// ```
/// use synaptic_sign::{keygen, Algorithm, Key};
///
/// let key = keygen(Algorithm::EcdsaP256)?;
/// assert_eq!(key.public_bytes().len(), 65);
/// assert_eq!(Key::from_pem(&key.to_pem())?, key);
/// # Ok::<(), synaptic_sign::SignError>(())
/// ```
pub fn keygen(algorithm: Algorithm) -> Result<Key, SignError> {
    let random = || -> Result<[u8; 32], SignError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| SignError::Random(e.to_string()))?;
        Ok(seed)
    };
    match algorithm {
        Algorithm::Ed25519 => Ok(Key(Inner::Ed25519(ed25519_dalek::SigningKey::from_bytes(
            &random()?,
        )))),
        // A scalar of 32 random bytes is below the group order but for a
        // chance of about 2^-32; draw again then.
        Algorithm::EcdsaP256 => loop {
            if let Ok(k) = p256::ecdsa::SigningKey::from_slice(&random()?) {
                return Ok(Key(Inner::P256(k)));
            }
        },
    }
}

/// Sign `container` (format 1, or format 2 whose old block is dropped)
/// with `key`: the header re-encoded as format 2, a signature block (the
/// payload's SHA-256, and the signature of the new header with it), the
/// payload.
///
/// The container is checked first as the store would check it without
/// keys ([`check`] under [`Trust::NONE`]): a damaged one is not signed.
///
/// # Errors
///
/// [`SignError::PublicOnly`] for a public key;
/// [`SignError::Container`] with the store's reason for a container it
/// refuses.
///
/// # Examples
///
/// ```
/// use synaptic_sign::{keygen, sign, Algorithm, SIGNATURE_LEN};
/// use synaptic_store::{Header, TensorShape, HEADER_LEN};
///
/// let shape = TensorShape::int8(&[8]);
/// let mut container = Header::new("m", 2, &[7; 8], shape, shape).unwrap().encode().to_vec();
/// container.extend_from_slice(&[7; 8]);
/// let signed = sign(&container, &keygen(Algorithm::EcdsaP256)?)?;
/// assert_eq!(signed.len(), HEADER_LEN + SIGNATURE_LEN + 8);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sign(container: &[u8], key: &Key) -> Result<Vec<u8>, SignError> {
    if !key.is_private() {
        return Err(SignError::PublicOnly);
    }
    let header = check(container, &Trust::NONE, 0).map_err(SignError::Container)?;
    let payload = &container[header.preamble_len()..];
    let mut header = header;
    header.signed = true;
    let header = header.encode();
    let payload_digest = sha256(payload);
    let block = SignatureBlock {
        algorithm: key.algorithm(),
        key_id: key.key_id(),
        payload_digest,
        signature: key.sign_digest(&signed_digest(&header, &payload_digest))?,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + SIGNATURE_LEN + payload.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(&block.encode());
    out.extend_from_slice(payload);
    Ok(out)
}

/// Check `container` as the device does ([`check`]) trusting `keys`
/// (private or public; only their public halves are used): with
/// `require`, an unsigned container is refused. The model's security
/// counter is taken as 0 (no version is a downgrade here).
///
/// With no keys and no `require`, a signed container's digest is checked
/// but its signature cannot be.
///
/// # Errors
///
/// The store's refusal: [`StoreError::BadContainer`] (header, its CRC, or
/// the signature block's form), [`StoreError::Length`],
/// [`StoreError::CrcMismatch`], [`StoreError::Unsigned`],
/// [`StoreError::UntrustedKey`], [`StoreError::BadSignature`];
/// [`StoreError::BadKey`] for `require` without keys.
///
/// # Examples
///
/// ```
/// use synaptic_sign::{keygen, sign, verify, Algorithm};
/// use synaptic_store::{Header, StoreError, TensorShape};
///
/// let shape = TensorShape::int8(&[3]);
/// let mut container = Header::new("m", 1, &[1, 2, 3], shape, shape).unwrap().encode().to_vec();
/// container.extend_from_slice(&[1, 2, 3]);
/// let (ours, theirs) = (keygen(Algorithm::Ed25519)?, keygen(Algorithm::Ed25519)?);
/// let signed = sign(&container, &ours)?;
/// assert_eq!(verify(&signed, &[theirs], false), Err(StoreError::UntrustedKey));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify(container: &[u8], keys: &[Key], require: bool) -> Result<Header, StoreError> {
    let bytes: Vec<Vec<u8>> = keys.iter().map(Key::public_bytes).collect();
    let public: Vec<PublicKey<'_>> = keys
        .iter()
        .zip(&bytes)
        .map(|(k, b)| k.store_key(b))
        .collect();
    let trust = Trust::new(&public, require)?;
    check(container, &trust, 0)
}

/// The signature block of a container whose header decodes, if it is
/// signed (to report who signed what [`verify`] accepted).
///
/// # Errors
///
/// [`StoreError::BadContainer`] when the header or the block does not
/// decode.
pub fn signature_block(container: &[u8]) -> Result<Option<SignatureBlock>, StoreError> {
    let header = Header::decode(container)?;
    if !header.signed {
        return Ok(None);
    }
    SignatureBlock::decode(container.get(HEADER_LEN..).unwrap_or_default()).map(Some)
}

/// Lower-case hexadecimal of `bytes` (key ids, raw keys).
pub fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The algorithm's name as `imgtool keygen -t` spells it.
pub fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Ed25519 => "ed25519",
        Algorithm::EcdsaP256 => "ecdsa-p256",
    }
}
