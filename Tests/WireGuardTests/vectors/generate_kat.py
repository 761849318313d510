#!/usr/bin/env python3
"""Independent WireGuard handshake known-answer generator.

Implements the Noise_IKpsk2 handshake of the WireGuard whitepaper (section 5.4) from scratch with
Python's hashlib.blake2s / hmac and the `cryptography` package's X25519 and ChaCha20-Poly1305, then
writes ../KATVectors.swift. The Swift tests assert that our Swift core produces the same bytes.

Run from anywhere:  python3 Tests/WireGuardTests/vectors/generate_kat.py
"""
import hashlib
import hmac
import os
import struct

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

CONSTRUCTION = b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"
IDENTIFIER = b"WireGuard v1 zx2c4 Jason@zx2c4.com"
LABEL_MAC1 = b"mac1----"
LABEL_COOKIE = b"cookie--"


def HASH(*parts):
    return hashlib.blake2s(b"".join(parts)).digest()


def MAC(key, data):
    return hashlib.blake2s(data, key=key, digest_size=16).digest()


def HMAC(key, data):
    return hmac.new(key, data, hashlib.blake2s).digest()


def KDF(n, key, data):
    t0 = HMAC(key, data)
    out, prev = [], b""
    for i in range(1, n + 1):
        prev = HMAC(t0, prev + bytes([i]))
        out.append(prev)
    return out


def AEAD(key, counter, plaintext, ad):
    nonce = b"\x00" * 4 + struct.pack("<Q", counter)
    return ChaCha20Poly1305(key).encrypt(nonce, plaintext, ad)


def _rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def hchacha20(key, nonce16):
    """HChaCha20 (draft-irtf-cfrg-xchacha section 2.2), for the XChaCha20 subkey."""
    st = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    st += list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))

    def qr(a, b, c, d):
        st[a] = (st[a] + st[b]) & 0xFFFFFFFF; st[d] = _rotl(st[d] ^ st[a], 16)
        st[c] = (st[c] + st[d]) & 0xFFFFFFFF; st[b] = _rotl(st[b] ^ st[c], 12)
        st[a] = (st[a] + st[b]) & 0xFFFFFFFF; st[d] = _rotl(st[d] ^ st[a], 8)
        st[c] = (st[c] + st[d]) & 0xFFFFFFFF; st[b] = _rotl(st[b] ^ st[c], 7)

    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return struct.pack("<8I", *(st[0:4] + st[12:16]))


def XAEAD(key, nonce24, plaintext, ad):
    sub = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(sub).encrypt(b"\x00" * 4 + nonce24[16:], plaintext, ad)


def _check_xaead():
    # draft-irtf-cfrg-xchacha-03 A.3.1, so this independent XChaCha is itself checked.
    pt = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
          b"sunscreen would be it.")
    out = XAEAD(bytes(range(0x80, 0xA0)), bytes(range(0x40, 0x58)), pt, bytes.fromhex("50515253c0c1c2c3c4c5c6c7"))
    assert out.hex().endswith("c0875924c1c7987947deafd8780acf49"), out.hex()
    assert out.hex().startswith("bd6d179d3e83d43b9576579493c0e939"), out.hex()


def raw_pub(priv):
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def DH(priv, pub):
    return X25519PrivateKey.from_private_bytes(priv).exchange(X25519PublicKey.from_public_bytes(pub))


def tai64n(unix_ns):
    secs = unix_ns // 1_000_000_000 + 0x400000000000000A
    nanos = (unix_ns % 1_000_000_000) & ~0xFFFFFF
    return struct.pack(">QI", secs, nanos)


def seed(label, size=32):
    return hashlib.blake2s(label.encode(), digest_size=size).digest()


def vector(name, psk, cookie):
    si_priv, sr_priv = seed("initiator static " + name), seed("responder static " + name)
    ei_priv, er_priv = seed("initiator ephemeral " + name), seed("responder ephemeral " + name)
    si_pub, sr_pub = raw_pub(si_priv), raw_pub(sr_priv)
    ei_pub, er_pub = raw_pub(ei_priv), raw_pub(er_priv)
    wall = 1_700_000_000_123_456_789
    sender_i, sender_r = 0x11223344, 0x55667788
    q = psk if psk is not None else b"\x00" * 32

    # Initiator -> responder (whitepaper 5.4.2)
    ck = HASH(CONSTRUCTION)
    h = HASH(HASH(ck, IDENTIFIER), sr_pub)
    ck = KDF(1, ck, ei_pub)[0]
    h = HASH(h, ei_pub)
    ck, k = KDF(2, ck, DH(ei_priv, sr_pub))
    enc_static = AEAD(k, 0, si_pub, h)
    h = HASH(h, enc_static)
    ck, k = KDF(2, ck, DH(si_priv, sr_pub))
    enc_time = AEAD(k, 0, tai64n(wall), h)
    h = HASH(h, enc_time)
    init = struct.pack("<I", 1) + struct.pack("<I", sender_i) + ei_pub + enc_static + enc_time
    init += MAC(HASH(LABEL_MAC1, sr_pub), init)
    init += MAC(cookie, init) if cookie else b"\x00" * 16
    assert len(init) == 148

    # Responder -> initiator (5.4.3)
    ck = KDF(1, ck, er_pub)[0]
    h = HASH(h, er_pub)
    ck = KDF(1, ck, DH(er_priv, ei_pub))[0]
    ck = KDF(1, ck, DH(er_priv, si_pub))[0]
    ck, tau, k = KDF(3, ck, q)
    h = HASH(h, tau)
    enc_nothing = AEAD(k, 0, b"", h)
    h = HASH(h, enc_nothing)
    resp = struct.pack("<III", 2, sender_r, sender_i) + er_pub + enc_nothing
    resp += MAC(HASH(LABEL_MAC1, si_pub), resp)
    resp += MAC(cookie, resp) if cookie else b"\x00" * 16
    assert len(resp) == 92

    # Transport keys (5.4.5) and two transport messages from the initiator (5.4.6)
    t_send_i, t_recv_i = KDF(2, ck, b"")
    keepalive = struct.pack("<IIQ", 4, sender_r, 0) + AEAD(t_send_i, 0, b"", b"")
    payload = bytes.fromhex("4500001400000000401100007f0000017f000001")  # 20-byte IPv4 header
    padded = payload + b"\x00" * (-len(payload) % 16)
    data = struct.pack("<IIQ", 4, sender_r, 1) + AEAD(t_send_i, 1, padded, b"")
    # Cookie reply to the initiation (5.4.7) from a responder under load, for source 192.0.2.1:51820
    # (our cookie input layout: address bytes then port big-endian), and the initiation's mac2.
    secret = seed("cookie secret " + name)
    nonce = seed("cookie nonce " + name, 24)
    tau = MAC(secret, bytes([192, 0, 2, 1]) + struct.pack(">H", 51820))
    mac1 = init[116:132]
    reply = struct.pack("<II", 3, sender_i) + nonce + XAEAD(HASH(LABEL_COOKIE, sr_pub), nonce, tau, mac1)
    assert len(reply) == 64
    return {
        "cookieSecret": secret, "cookieNonce": nonce, "cookieReply": reply, "cookieValue": tau,
        "initiationMAC2WithCookie": MAC(tau, init[:132]),
        "initiatorStaticPrivate": si_priv, "responderStaticPrivate": sr_priv,
        "initiatorEphemeralPrivate": ei_priv, "responderEphemeralPrivate": er_priv,
        "presharedKey": q, "cookie": cookie or b"",
        "initiation": init, "response": resp,
        "initiatorSendKey": t_send_i, "initiatorReceiveKey": t_recv_i,
        "keepalive": keepalive, "dataPayload": payload, "data": data,
    }, wall, sender_i, sender_r


def main():
    _check_xaead()
    here = os.path.dirname(os.path.abspath(__file__))
    out = [
        "// GENERATED by vectors/generate_kat.py (independent Python implementation); do not edit.",
        "// WireGuard handshake known-answer vectors.",
        "",
        "struct KATVector {",
        "    let name: String",
        "    let wallClock: UInt64",
        "    let initiatorIndex: UInt32",
        "    let responderIndex: UInt32",
        "    let fields: [String: String]",
        "}",
        "",
        "let katVectors: [KATVector] = [",
    ]
    cases = [("no-psk", None, None), ("psk-cookie", seed("preshared key"), seed("cookie", 16))]
    for name, psk, cookie in cases:
        v, wall, si, sr = vector(name, psk, cookie)
        out.append("    KATVector(")
        out.append(f'        name: "{name}", wallClock: {wall}, initiatorIndex: 0x{si:08x}, responderIndex: 0x{sr:08x},')
        out.append("        fields: [")
        for key, value in v.items():
            out.append(f'            "{key}": "{value.hex()}",')
        out.append("        ]),")
    out.append("]")
    with open(os.path.join(here, "..", "KATVectors.swift"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
