#!/usr/bin/env python3
"""Helpers for scripts/e2e/hosts.sh (host rules on live traffic).

  dns-server ADDR NAME IP [NAME IP …]
                                 answer A queries for each NAME with its IP (TTL 300) on ADDR:53, UDP and
                                 TCP (RFC 7766; each TCP answer written in two segments, cut inside the
                                 message, so a reader must reassemble it); others NXDOMAIN
  resolve SERVER NAME            ask SERVER:53/udp for NAME's A record; prints "answer IP" or "no-answer"
  resolve-tcp SERVER NAME        the same over TCP
  echo HOST PORT SECS            connect, send a line, wait for it back: "echoed", "timeout", "refused", "reset"
  udp-sink ADDR PORT LOG         append "got N" to LOG for every datagram to ADDR:PORT
  quic-initial HOST PORT SNI     send a QUIC v1 client Initial (RFC 9000 §17.2.2, RFC 9001 §5) whose
                                 ClientHello names SNI, three times from one socket
The QUIC Initial is built with the `cryptography` package (Debian python3-cryptography): keys from
the DCID by HKDF (RFC 9001 §5.2), AES-128-GCM payload protection, AES-128-ECB header protection.
"""
import hashlib, hmac, os, socket, struct, sys, time


def dns_name(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.rstrip(".").split(".")) + b"\0"


def dns_answer(q, names):
    """The reply to query q (None when q is not a query we can read)."""
    if len(q) < 12 or b"\0" not in q[12:]:
        return None
    qid = q[:2]
    end = q.index(b"\0", 12) + 5
    question = q[12:end]
    ip = names.get(question[:-4].lower()) if question[-4:] == b"\0\x01\0\x01" else None
    if ip is None:
        return qid + b"\x81\x83" + struct.pack(">HHHH", 1, 0, 0, 0) + question
    ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton(ip)
    return qid + b"\x81\x80" + struct.pack(">HHHH", 1, 1, 0, 0) + question + ans


def recv_exact(conn, n):
    """n bytes from conn (MSG_WAITALL does not wait on a socket with a timeout in Python)."""
    b = b""
    while len(b) < n:
        d = conn.recv(n - len(b))
        if not d:
            raise OSError("closed early")
        b += d
    return b


def dns_tcp(conn, names):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.settimeout(5)
    try:
        n = struct.unpack(">H", recv_exact(conn, 2))[0]
        r = dns_answer(recv_exact(conn, n), names)
        if r is not None:
            msg = struct.pack(">H", len(r)) + r
            conn.sendall(msg[:9])        # the length and part of the header: one segment ...
            time.sleep(0.1)
            conn.sendall(msg[9:])        # ... the rest, the answer record among it, another
            time.sleep(0.5)
    except (OSError, struct.error):
        pass
    conn.close()


def dns_server(addr, pairs):
    import threading
    names = {dns_name(pairs[i].lower()): pairs[i + 1] for i in range(0, len(pairs) - 1, 2)}
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, 53))
    t.listen(8)

    def accept():
        while True:
            c, _ = t.accept()
            threading.Thread(target=dns_tcp, args=(c, names), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print("ready", flush=True)
    while True:
        q, peer = s.recvfrom(2048)
        r = dns_answer(q, names)
        if r is not None:
            s.sendto(r, peer)


def resolve(server, name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    q = b"\x4e\x21\x01\x00" + struct.pack(">HHHH", 1, 0, 0, 0) + dns_name(name) + b"\0\x01\0\x01"
    s.sendto(q, (server, 53))
    try:
        r, _ = s.recvfrom(2048)
    except socket.timeout:
        print("no-answer")
        return
    if struct.unpack(">H", r[6:8])[0] >= 1 and len(r) >= 4:
        print("answer " + socket.inet_ntoa(r[-4:]))
    else:
        print("no-answer")


def resolve_tcp(server, name):
    q = b"\x4e\x22\x01\x00" + struct.pack(">HHHH", 1, 0, 0, 0) + dns_name(name) + b"\0\x01\0\x01"
    try:
        c = socket.create_connection((server, 53), timeout=3)
        c.sendall(struct.pack(">H", len(q)) + q)
        n = struct.unpack(">H", recv_exact(c, 2))[0]
        r = recv_exact(c, n)
    except (OSError, struct.error):
        print("no-answer")
        return
    if len(r) == n and struct.unpack(">H", r[6:8])[0] >= 1:
        print("answer " + socket.inet_ntoa(r[-4:]))
    else:
        print("no-answer")


def echo(host, port, secs):
    try:
        c = socket.create_connection((host, port), timeout=secs)
    except ConnectionRefusedError:
        print("refused"); return
    except ConnectionResetError:
        # The gateway's RST (standing in for the banner) can reach the client's stack before
        # connect() has returned to us: still a reset, not a wait.
        print("reset"); return
    except (socket.timeout, TimeoutError):
        print("timeout"); return
    c.settimeout(secs)
    try:
        c.sendall(b"hello\n")
        data = c.recv(100)
        print("echoed" if data.startswith(b"hello") else "closed")
    except (socket.timeout, TimeoutError):
        print("timeout")
    except ConnectionResetError:
        print("reset")


def banner_server(addr, port):
    """A server that speaks first (like SMTP or SSH): each connection gets a banner line."""
    import threading
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(16)
    print("ready", flush=True)
    def serve(c):
        try:
            c.sendall(b"220 banner\r\n")
            c.settimeout(10)
            while c.recv(100):
                pass
        except OSError:
            pass
        finally:
            c.close()
    while True:
        c, _ = s.accept()
        print("accepted", flush=True)  # a handshake completed: hosts.sh checks it did not for 2525
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def banner_client(host, port, secs):
    """Connects and waits for the banner: prints banner, reset, closed or timeout."""
    try:
        c = socket.create_connection((host, port), timeout=secs)
    except ConnectionRefusedError:
        print("refused"); return
    except ConnectionResetError:
        # The gateway's RST (standing in for the banner) can reach the client's stack before
        # connect() has returned to us: still a reset, not a wait.
        print("reset"); return
    except (socket.timeout, TimeoutError):
        print("timeout"); return
    c.settimeout(secs)
    try:
        data = c.recv(100)
        print("banner" if data.startswith(b"220") else "closed")
    except (socket.timeout, TimeoutError):
        print("timeout")
    except ConnectionResetError:
        print("reset")


def udp_sink(addr, port, log):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    print("ready", flush=True)
    while True:
        d, _ = s.recvfrom(65535)
        with open(log, "a") as f:
            f.write(f"got {len(d)}\n")


def hkdf_extract(salt, ikm):
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand_label(secret, label, length):
    full = b"tls13 " + label.encode()
    info = struct.pack(">H", length) + bytes([len(full)]) + full + b"\0"
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(secret, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def client_hello(sni):
    n = sni.encode()
    ext = b""
    ext += struct.pack(">HH", 0x002B, 3) + b"\x02\x03\x04"                          # supported_versions: TLS 1.3
    ext += struct.pack(">HH", 0x000A, 4) + b"\x00\x02\x00\x1d"                      # supported_groups: x25519
    ext += struct.pack(">HH", 0x0033, 38) + b"\x00\x24\x00\x1d\x00\x20" + os.urandom(32)  # key_share
    ext += struct.pack(">HH", 0x0010, 5) + b"\x00\x03\x02h3"                        # ALPN h3
    entry = b"\0" + struct.pack(">H", len(n)) + n
    ext += struct.pack(">HH", 0x0000, len(entry) + 2) + struct.pack(">H", len(entry)) + entry
    body = b"\x03\x03" + os.urandom(32) + b"\0" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack(">H", len(ext)) + ext
    return b"\x01" + struct.pack(">I", len(body))[1:] + body


def quic_initial(sni):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    dcid = os.urandom(8)
    secret = hkdf_expand_label(hkdf_extract(bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a"), dcid),
                               "client in", 32)
    key, iv, hp = (hkdf_expand_label(secret, "quic key", 16), hkdf_expand_label(secret, "quic iv", 12),
                   hkdf_expand_label(secret, "quic hp", 16))
    ch = client_hello(sni)
    crypto = b"\x06\x00" + struct.pack(">H", 0x4000 | len(ch)) + ch   # CRYPTO frame, offset 0
    pn = 0
    header_len = 1 + 4 + 1 + len(dcid) + 1 + 1 + 2 + 4
    payload = crypto + b"\0" * max(0, 1200 - header_len - len(crypto) - 16)   # PADDING to 1200 bytes
    length = 4 + len(payload) + 16
    header = bytes([0xC3]) + struct.pack(">I", 1) + bytes([len(dcid)]) + dcid + b"\0" + b"\0" \
        + struct.pack(">H", 0x4000 | length) + struct.pack(">I", pn)
    nonce = bytes(a ^ b for a, b in zip(iv, pn.to_bytes(12, "big")))
    sealed = AESGCM(key).encrypt(nonce, payload, header)
    enc = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
    mask = enc.update(sealed[0:16]) + enc.finalize()
    first = bytes([header[0] ^ (mask[0] & 0x0F)])
    pn_bytes = bytes(a ^ b for a, b in zip(header[-4:], mask[1:5]))
    return first + header[1:-4] + pn_bytes + sealed


def send_quic(host, port, sni):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(3):
        s.sendto(quic_initial(sni), (host, port))
        time.sleep(0.2)
    print("sent")


cmd = sys.argv[1]
if cmd == "dns-server":
    dns_server(sys.argv[2], sys.argv[3:])
elif cmd == "resolve":
    resolve(sys.argv[2], sys.argv[3])
elif cmd == "resolve-tcp":
    resolve_tcp(sys.argv[2], sys.argv[3])
elif cmd == "echo":
    echo(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
elif cmd == "banner-server":
    banner_server(sys.argv[2], int(sys.argv[3]))
elif cmd == "banner-client":
    banner_client(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
elif cmd == "udp-sink":
    udp_sink(sys.argv[2], int(sys.argv[3]), sys.argv[4])
elif cmd == "quic-initial":
    send_quic(sys.argv[2], int(sys.argv[3]), sys.argv[4])
else:
    sys.exit(f"unknown command {cmd}")
