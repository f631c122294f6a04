#!/usr/bin/env python3
"""Token server for the registry integration tests (Docker registry v2 token auth, as
CNCF distribution 2.8 implements it). Stdlib + `cryptography` only.

It signs RS256 JWTs with a fresh key whose self-signed certificate it writes to --signer-cert
(the registry's `auth.token.rootcertbundle`, carried in the token's `x5c` header), checks HTTP
Basic credentials, and serves HTTPS with --tls-cert/--tls-key. GET /stats returns counters.
Facts relied on (distribution 2.8): `aud` must be a string equal to the service; `exp` an
integer; GET/HEAD need the `pull` action on `repository:<name>`; push needs pull+push.
"""

import argparse, base64, datetime, json, secrets, ssl, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--signer-cert", required=True)
    p.add_argument("--tls-cert", required=True)
    p.add_argument("--tls-key", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--issuer", default="llso-test-issuer")
    p.add_argument("--service", default="llso-test-registry")
    args = p.parse_args()

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "llso-token-signer")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    with open(args.signer_cert, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
    stats = {"requests": 0, "issued": 0, "denied": 0}
    lock = threading.Lock()

    def sign(claims):
        header = {"alg": "RS256", "typ": "JWT", "x5c": [x5c]}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if url.path == "/stats":
                with lock:
                    return self.reply(200, dict(stats))
            with lock:
                stats["requests"] += 1
            expected = "Basic " + base64.b64encode(f"{args.user}:{args.password}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                with lock:
                    stats["denied"] += 1
                return self.reply(401, {"errors": [{"code": "UNAUTHORIZED", "message": "invalid credentials"}]})
            access = []
            for scope in urllib.parse.parse_qs(url.query).get("scope", []):
                for item in scope.split(" "):
                    kind, rest = item.split(":", 1)
                    resource, actions = rest.rsplit(":", 1)
                    access.append({"type": kind, "name": resource, "actions": actions.split(",")})
            t = int(time.time())
            token = sign({"iss": args.issuer, "sub": args.user, "aud": args.service, "exp": t + 300,
                          "nbf": t - 10, "iat": t, "jti": secrets.token_hex(8), "access": access})
            with lock:
                stats["issued"] += 1
            self.reply(200, {"token": token, "access_token": token, "expires_in": 300})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
