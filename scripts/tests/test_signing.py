"""Signed containers against MCUboot's imgtool: fresh `imgtool keygen` keys
of both algorithms sign a model through `synaptic-pack pack --key`, which
verifies under its key and refuses another key and a changed payload; the
signature is checked again here with the `cryptography` package (another
implementation than the store's); `getpub --raw` gives the key `imgtool
getpub` gives, and imgtool reads a key `synaptic-pack keygen` wrote."""
import hashlib
import os
import shutil
import struct
import subprocess
import sys

import pytest

imgtool = pytest.importorskip("imgtool", reason="imgtool (scripts/requirements.txt) not installed")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, ed25519  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import (  # noqa: E402
    Prehashed, encode_dss_signature)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "micro_speech.tflite")
HEADER_LEN = 96
SIGNATURE_LEN = 136
ALGORITHMS = ["ed25519", "ecdsa-p256"]


@pytest.fixture(scope="module")
def pack_tool():
    """The synaptic-pack binary: $SYNAPTIC_PACK, or built with cargo."""
    if os.environ.get("SYNAPTIC_PACK"):
        return os.environ["SYNAPTIC_PACK"]
    if shutil.which("cargo") is None:
        pytest.fail("cargo is needed to build synaptic-pack (or set SYNAPTIC_PACK)")
    rust = os.path.join(ROOT, "rust")
    subprocess.run(["cargo", "build", "--quiet", "-p", "synaptic-pack"], cwd=rust, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(rust, "target"))
    return os.path.join(target, "debug", "synaptic-pack")


def run_imgtool(*args):
    out = subprocess.run([sys.executable, "-m", "imgtool.main", *args],
                         capture_output=True, text=True, check=True)
    return out.stdout


def run_pack(tool, *args):
    return subprocess.run([tool, *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Fresh imgtool keys, one per algorithm: {algorithm: path}."""
    d = tmp_path_factory.mktemp("keys")
    made = {}
    for algorithm in ALGORITHMS:
        path = d / f"{algorithm}.pem"
        run_imgtool("keygen", "-t", algorithm, "-k", str(path))
        assert path.read_text().startswith("-----BEGIN PRIVATE KEY-----\n")
        made[algorithm] = path
    return made


def imgtool_public(key_path) -> bytes:
    """The raw public key of `imgtool getpub -e pem`, parsed with cryptography."""
    public = serialization.load_pem_public_key(run_imgtool("getpub", "-k", str(key_path),
                                                           "-e", "pem").encode())
    if isinstance(public, ed25519.Ed25519PublicKey):
        return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert isinstance(public.curve, ec.SECP256R1)
    return public.public_bytes(serialization.Encoding.X962,
                               serialization.PublicFormat.UncompressedPoint)


def check_signature(container: bytes, key_path):
    """The block's fields and signature, checked with cryptography alone."""
    header = container[:HEADER_LEN]
    block = container[HEADER_LEN:HEADER_LEN + SIGNATURE_LEN]
    payload = container[HEADER_LEN + SIGNATURE_LEN:]
    assert struct.unpack_from("<H", header, 4)[0] == 2, "format 2"
    magic, algorithm, reserved = struct.unpack_from("<4sB3s", block)
    assert (magic, reserved) == (b"SYNS", bytes(3))
    raw = imgtool_public(key_path)
    assert block[8:40] == hashlib.sha256(raw).digest(), "key id"
    assert block[40:72] == hashlib.sha256(payload).digest(), "payload digest"
    signed = hashlib.sha256(header + block[40:72]).digest()
    signature = block[72:136]
    private = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    if algorithm == 1:
        private.public_key().verify(signature, signed)
    else:
        assert algorithm == 2
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                   int.from_bytes(signature[32:], "big"))
        private.public_key().verify(der, signed, ec.ECDSA(Prehashed(hashes.SHA256())))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_pack_with_an_imgtool_key_verifies_and_refuses(pack_tool, keys, tmp_path, algorithm):
    key = keys[algorithm]
    other = keys[next(a for a in ALGORITHMS if a != algorithm)]
    container = tmp_path / "kws.bin"
    out = run_pack(pack_tool, "pack", MODEL, "--name", "kws", "--version", "5",
                   "--key", key, "--out", container)
    assert out.returncode == 0, out.stderr
    data = container.read_bytes()
    assert len(data) == os.path.getsize(MODEL) + HEADER_LEN + SIGNATURE_LEN
    check_signature(data, key)

    out = run_pack(pack_tool, "verify", container, "--key", key, "--require")
    assert out.returncode == 0, out.stderr
    assert f"algorithm: {algorithm}" in out.stdout
    assert "name: kws" in out.stdout and "version: 5" in out.stdout

    out = run_pack(pack_tool, "verify", container, "--key", other, "--require")
    assert out.returncode == 1
    assert "untrusted key" in out.stderr

    tampered = tmp_path / "tampered.bin"
    changed = bytearray(data)
    changed[HEADER_LEN + SIGNATURE_LEN + 1234] ^= 0x01
    tampered.write_bytes(bytes(changed))
    out = run_pack(pack_tool, "verify", tampered, "--key", key)
    assert out.returncode == 1
    assert "tampered" in out.stderr


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_getpub_raw_is_the_key_imgtool_getpub_prints(pack_tool, keys, tmp_path, algorithm):
    raw = tmp_path / "key.bin"
    out = run_pack(pack_tool, "getpub", "--key", keys[algorithm], "--raw", raw)
    assert out.returncode == 0, out.stderr
    expected = imgtool_public(keys[algorithm])
    assert len(expected) == {"ed25519": 32, "ecdsa-p256": 65}[algorithm]
    assert raw.read_bytes() == expected
    assert f"public key: {expected.hex()}" in out.stdout
    assert f"key id: {hashlib.sha256(expected).hexdigest()}" in out.stdout


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_imgtool_reads_a_key_synaptic_pack_made(pack_tool, tmp_path, algorithm):
    key = tmp_path / "ours.pem"
    out = run_pack(pack_tool, "keygen", "--type", algorithm, "--out", key)
    assert out.returncode == 0, out.stderr
    raw = tmp_path / "ours.bin"
    assert run_pack(pack_tool, "getpub", "--key", key, "--raw", raw).returncode == 0
    assert imgtool_public(key) == raw.read_bytes()
    # The C array imgtool would embed holds the same SubjectPublicKeyInfo.
    assert "pub_key" in run_imgtool("getpub", "-k", str(key))
    # And a container signed with it verifies with cryptography.
    container = tmp_path / "kws.bin"
    assert run_pack(pack_tool, "pack", MODEL, "--name", "kws", "--key", key,
                    "--out", container).returncode == 0
    check_signature(container.read_bytes(), key)
    # Never over an existing key.
    before = key.read_bytes()
    out = run_pack(pack_tool, "keygen", "--type", algorithm, "--out", key)
    assert out.returncode == 2
    assert key.read_bytes() == before


def firmware_key(key_path, tmp_path):
    """What scripts/signature_key.py embeds in the firmware: (status,
    the Rust it wrote or its error)."""
    out_rs = tmp_path / "trusted_key.rs"
    run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "signature_key.py"),
                          str(key_path), str(out_rs)], capture_output=True, text=True)
    return run.returncode, out_rs.read_text() if run.returncode == 0 else run.stderr


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_firmware_embeds_the_key_getpub_prints(pack_tool, keys, tmp_path, algorithm):
    raw = tmp_path / "key.bin"
    assert run_pack(pack_tool, "getpub", "--key", keys[algorithm], "--raw", raw).returncode == 0
    # From the private key and from its public half alike.
    public = tmp_path / "public.pem"
    public.write_text(run_imgtool("getpub", "-k", str(keys[algorithm]), "-e", "pem"))
    for key in (keys[algorithm], public):
        status, rust = firmware_key(key, tmp_path)
        assert status == 0, rust
        listed = rust.split("bytes: &[")[1].split("]")[0]
        assert bytes(int(b, 16) for b in listed.split(", ")) == raw.read_bytes()
        name, verifier = {"ed25519": ("Ed25519", "verify_ed25519"),
                          "ecdsa-p256": ("EcdsaP256", "verify_ecdsa_p256")}[algorithm]
        assert f"algorithm: Algorithm::{name}," in rust
        assert f"pub const VERIFIER: Verifier = synaptic_store::signature::{verifier};" in rust


def test_the_firmware_refuses_a_key_it_cannot_use(tmp_path):
    rsa = tmp_path / "rsa.pem"
    run_imgtool("keygen", "-t", "rsa-2048", "-k", str(rsa))
    status, error = firmware_key(rsa, tmp_path)
    assert status == 1 and "not an Ed25519 or ECDSA P-256 key" in error
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    status, error = firmware_key(garbage, tmp_path)
    assert status == 1 and str(garbage) in error
    status, error = firmware_key(tmp_path / "absent.pem", tmp_path)
    assert status == 1 and "absent.pem" in error
