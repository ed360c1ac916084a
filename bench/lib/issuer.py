#!/usr/bin/env python3
"""The benchmark's loopback OIDC issuer: an RSA key, its discovery document and JWKS served on
127.0.0.1, and a pool of distinct RS256 ID tokens minted with it (one per line).

    issuer.py keygen DIR                      key.pem, pub.pem, jwks.json (kid bench-1)
    issuer.py serve DIR PORT                  discovery + JWKS at http://127.0.0.1:PORT
    issuer.py mint DIR --iss URL --aud AUD --sub SUB --count N --ttl SECS --out FILE

Needs the `cryptography` package (the benchmark's venv has it).
"""
import argparse
import base64
import json
import os
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

KID = "bench-1"


def b64u(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def int_b64u(n: int) -> str:
    return b64u(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def keygen(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with open(os.path.join(d, "key.pem"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    pub = key.public_key()
    with open(os.path.join(d, "pub.pem"), "wb") as f:
        f.write(pub.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    nums = pub.public_numbers()
    jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KID,
                      "n": int_b64u(nums.n), "e": int_b64u(nums.e)}]}
    with open(os.path.join(d, "jwks.json"), "w") as f:
        json.dump(jwks, f)


def serve(d: str, port: int) -> None:
    issuer = f"http://127.0.0.1:{port}"
    with open(os.path.join(d, "jwks.json"), "rb") as f:
        jwks = f.read()
    discovery = json.dumps({
        "issuer": issuer,
        "jwks_uri": f"{issuer}/jwks",
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }).encode()
    fetches = {"discovery": 0, "jwks": 0}

    class H(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if self.path == "/.well-known/openid-configuration":
                body, fetches["discovery"] = discovery, fetches["discovery"] + 1
            elif self.path == "/jwks":
                body, fetches["jwks"] = jwks, fetches["jwks"] + 1
            elif self.path == "/stats":
                body = json.dumps(fetches).encode()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()


def mint(d: str, iss: str, aud: str, sub: str, count: int, ttl: int, out: str) -> None:
    with open(os.path.join(d, "key.pem"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    header = b64u(json.dumps({"alg": "RS256", "kid": KID, "typ": "JWT"}, separators=(",", ":")).encode())
    now = int(time.time())
    with open(out, "w") as f:
        for i in range(count):
            claims = {"iss": iss, "sub": sub, "aud": aud, "iat": now - 5, "nbf": now - 5, "exp": now + ttl,
                      "jti": str(uuid.uuid4()), "n": i}
            signing_input = header + "." + b64u(json.dumps(claims, separators=(",", ":")).encode())
            sig = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
            f.write(signing_input + "." + b64u(sig) + "\n")


def main() -> int:
    p = argparse.ArgumentParser()
    sp = p.add_subparsers(dest="cmd", required=True)
    k = sp.add_parser("keygen")
    k.add_argument("dir")
    s = sp.add_parser("serve")
    s.add_argument("dir")
    s.add_argument("port", type=int)
    m = sp.add_parser("mint")
    m.add_argument("dir")
    m.add_argument("--iss", required=True)
    m.add_argument("--aud", required=True)
    m.add_argument("--sub", required=True)
    m.add_argument("--count", type=int, required=True)
    m.add_argument("--ttl", type=int, default=7200)
    m.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "keygen":
        keygen(a.dir)
    elif a.cmd == "serve":
        serve(a.dir, a.port)
    else:
        mint(a.dir, a.iss, a.aud, a.sub, a.count, a.ttl, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
