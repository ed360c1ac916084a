#!/usr/bin/env python3
"""Sign an STS GetCallerIdentity request with botocore's SigV4 (the reference implementation).

Run with the peers' venv python ($SVC_TEST_PYTHON, set up by scripts/peers.sh):

    $SVC_TEST_PYTHON tests/peers/sign_sts.py --url "$SVC_TEST_MOTO_AUTH_URL" --region us-east-1 \
        --key-id "$SVC_TEST_MOTO_KEY_ID" --secret "$SVC_TEST_MOTO_SECRET" \
        [--session-token TOKEN] [--server-id-header VALUE]

Prints one JSON object on stdout:

    {"headers": {"Authorization": "AWS4-HMAC-SHA256 Credential=...", "X-Amz-Date": "...",
                 "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
                 "Host": "127.0.0.1:PORT", ["X-Amz-Security-Token": ...,] ["X-Svc-Server-Id": ...]},
     "region": "us-east-1"}

The signed request is a POST to --url with the body exactly
`Action=GetCallerIdentity&Version=2011-06-15` (BODY below), service `sts`. Sending exactly those
headers and that body to the URL gets 200 <GetCallerIdentityResponse> from an STS that checks
signatures (the signature-validating moto). --server-id-header adds an `X-Svc-Server-Id` header
and includes it in the signature (SignedHeaders), the way a Svc client binds its proof to a server.
"""

import argparse
import json
import sys
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

BODY = "Action=GetCallerIdentity&Version=2011-06-15"
CONTENT_TYPE = "application/x-www-form-urlencoded; charset=utf-8"


def host_header(url: str) -> str:
    """The Host value botocore signs: netloc without userinfo and without a default port."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme)
    if parts.port is not None and parts.port != default:
        host = f"{host}:{parts.port}"
    return host


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="STS endpoint, e.g. http://127.0.0.1:PORT/")
    ap.add_argument("--region", required=True)
    ap.add_argument("--key-id", required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--session-token", default=None)
    ap.add_argument("--server-id-header", default=None, metavar="VALUE",
                    help="add and sign an X-Svc-Server-Id header with this value")
    args = ap.parse_args(argv)

    headers = {"Content-Type": CONTENT_TYPE}
    if args.server_id_header is not None:
        headers["X-Svc-Server-Id"] = args.server_id_header
    request = AWSRequest(method="POST", url=args.url, data=BODY.encode(), headers=headers)
    creds = Credentials(args.key_id, args.secret, args.session_token)
    SigV4Auth(creds, "sts", args.region).add_auth(request)

    out = {name: value for name, value in request.headers.items()}
    # add_auth signs the host from the URL but does not add the header itself.
    out["Host"] = host_header(args.url)
    # Header values may come back as bytes in some botocore versions.
    out = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in out.items()}
    json.dump({"headers": out, "region": args.region}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
