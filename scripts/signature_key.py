#!/usr/bin/env python3
"""The model store's trusted key, as Rust, for synaptic-zephyr's build.

    signature_key.py KEY.pem OUT.rs

KEY.pem is what CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE names: a private
key as `imgtool keygen` writes it (PKCS#8), or a public key (SPKI), Ed25519
or ECDSA P-256. OUT.rs gets its public half in the form the store's
signature blocks name it (Ed25519's 32 bytes, P-256's 65-byte uncompressed
point; what `synaptic-pack getpub --raw` prints) and the one verifier the
firmware links. The module's CMake runs this at configure time, so the
firmware's build compiles no cryptography for the host: the `cryptography`
package imgtool depends on reads the key.
"""
import sys


def public_key(pem):
    """(algorithm, raw public bytes) of a PEM key; ValueError if unusable."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    try:
        key = serialization.load_pem_private_key(pem, password=None).public_key()
    except (ValueError, TypeError):
        key = serialization.load_pem_public_key(pem)
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519", key.public_bytes(serialization.Encoding.Raw,
                                           serialization.PublicFormat.Raw)
    if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1":
        return "EcdsaP256", key.public_bytes(serialization.Encoding.X962,
                                             serialization.PublicFormat.UncompressedPoint)
    raise ValueError("not an Ed25519 or ECDSA P-256 key")


VERIFIERS = {"Ed25519": "verify_ed25519", "EcdsaP256": "verify_ecdsa_p256"}


def rust(algorithm, raw):
    """synaptic-zephyr's `trusted_key.rs` for one key."""
    listed = ", ".join(f"{b:#04x}" for b in raw)
    return (
        "/// The public key of CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE.\n"
        "pub const TRUSTED_KEYS: &[PublicKey<'static>] = &[PublicKey { "
        f"algorithm: Algorithm::{algorithm}, bytes: &[{listed}] }}];\n"
        "/// Its algorithm's check.\n"
        f"pub const VERIFIER: Verifier = synaptic_store::signature::{VERIFIERS[algorithm]};\n"
    )


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        import cryptography  # noqa: F401
    except ImportError:
        print("signature_key: the Python package 'cryptography' is needed to read the key "
              "(pip install cryptography, or imgtool, which brings it)", file=sys.stderr)
        return 1
    try:
        with open(argv[1], "rb") as f:
            algorithm, raw = public_key(f.read())
    except (OSError, ValueError, TypeError) as e:
        print(f"signature_key: {argv[1]}: {e}", file=sys.stderr)
        return 1
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(rust(algorithm, raw))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
