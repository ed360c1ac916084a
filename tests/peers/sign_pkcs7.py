#!/usr/bin/env python3
"""Build signed cloud attestation evidence for the tests: PKCS#7 SignedData (well-formed and
hostile shapes), raw RSA signatures, and test certificates.

Run with the peers' venv python ($SVC_TEST_PYTHON, which has `cryptography`):

    $SVC_TEST_PYTHON tests/peers/sign_pkcs7.py < jobs.json

stdin is one JSON object {"jobs": [JOB, ...]}; stdout is {"results": [RESULT, ...]}, one result
per job, in order (one process for many signatures keeps the tests fast). Paths are PEM files.

  {"op": "pkcs7", "content_b64": B64, "key": KEY, "cert": CERT}        -> base64 DER ContentInfo
      optional: "certs": [CERT, ...]   certificates embedded in the bag, in this order (default
                                       [cert]; [] for none)
                "sid_cert": CERT       the certificate the SignerInfo names (default cert)
                "digest": "sha256" | "sha256WithRSAEncryption"  OID in digestAlgorithm (the
                                       second is cloudB's quirk); default sha256
                "signed_attrs": bool   contentType + messageDigest + signingTime attributes
                                       (default true)
                "ber": bool            indefinite lengths and a chunked OCTET STRING, the way
                                       cloudA's IMDS encodes its rsa2048 documents
                "signed_content_b64": B64   sign these bytes but embed content_b64 (a hostile
                                       document whose signature does not cover its content)
                "extra_signers": [{"key": KEY, "cert": CERT}, ...]  more SignerInfos
                "detached": bool       omit the content
  {"op": "standard", "content_b64": B64, "key": KEY, "cert": CERT}     -> base64 DER made by
      cryptography's own PKCS7SignatureBuilder (a reference encoder, to cross-check ours)
  {"op": "raw", "content_b64": B64, "key": KEY}                        -> base64 RSA PKCS#1 v1.5
      SHA-256 signature (cloudA's /signature form)
  {"op": "leaf", "issuer_key": KEY, "issuer_cert": CERT, "san": [DNS, ...], "aia": URL?}
      -> {"cert": PEM, "key": PEM}: a fresh RSA-2048 end-entity certificate valid from one hour
      ago for a year, with an AIA caIssuers URL when "aia" is given.

Nothing here is a real credential; the keys are the checked-in test fixtures.
"""

import base64
import datetime
import hashlib
import json
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID

OID_SIGNED_DATA = "1.2.840.113549.1.7.2"
OID_DATA = "1.2.840.113549.1.7.1"
OID_CONTENT_TYPE = "1.2.840.113549.1.9.3"
OID_MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
OID_SIGNING_TIME = "1.2.840.113549.1.9.5"
OID_SHA256 = "2.16.840.1.101.3.4.2.1"
OID_SHA256_RSA = "1.2.840.113549.1.1.11"
OID_RSA = "1.2.840.113549.1.1.1"


# ---- a minimal DER/BER writer ----------------------------------------------------------------

def length(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def tlv(tag, content, ber=False):
    if ber and tag & 0x20:
        return bytes([tag, 0x80]) + content + b"\x00\x00"
    return bytes([tag]) + length(len(content)) + content


def seq(*parts, ber=False):
    return tlv(0x30, b"".join(parts), ber)


def der_set(*parts):
    return tlv(0x31, b"".join(sorted(parts)))


def oid(dotted):
    nums = [int(x) for x in dotted.split(".")]
    out = bytes([40 * nums[0] + nums[1]])
    for n in nums[2:]:
        enc = [n & 0x7F]
        n >>= 7
        while n:
            enc.append(0x80 | (n & 0x7F))
            n >>= 7
        out += bytes(reversed(enc))
    return tlv(0x06, out)


def integer(n):
    b = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)
    return tlv(0x02, b)


def octets(b):
    return tlv(0x04, b)


def alg(dotted):
    return seq(oid(dotted), b"\x05\x00")


def utc_time(t):
    return tlv(0x17, t.strftime("%y%m%d%H%M%SZ").encode())


# ---- inputs -------------------------------------------------------------------------------------

def load_key(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def load_cert(path):
    with open(path, "rb") as f:
        return x509.load_pem_x509_certificate(f.read())


def cert_der(c):
    return c.public_bytes(serialization.Encoding.DER)


def rsa_sign(key, data):
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


# ---- jobs ---------------------------------------------------------------------------------------

def signer_info(key, sid_cert, signed, digest_oid, with_attrs):
    sid = seq(sid_cert.issuer.public_bytes(), integer(sid_cert.serial_number))
    if with_attrs:
        attrs = [
            seq(oid(OID_CONTENT_TYPE), der_set(oid(OID_DATA))),
            seq(oid(OID_MESSAGE_DIGEST), der_set(octets(hashlib.sha256(signed).digest()))),
            seq(oid(OID_SIGNING_TIME), der_set(utc_time(datetime.datetime.now(datetime.timezone.utc)))),
        ]
        signed_set = der_set(*attrs)
        signature = rsa_sign(key, signed_set)
        attrs_field = bytes([0xA0]) + signed_set[1:]  # [0] IMPLICIT: same content, context tag
    else:
        signature = rsa_sign(key, signed)
        attrs_field = b""
    return seq(integer(1), sid, alg(digest_oid), attrs_field, alg(OID_RSA), octets(signature))


def job_pkcs7(j):
    content = base64.b64decode(j["content_b64"])
    signed = base64.b64decode(j["signed_content_b64"]) if "signed_content_b64" in j else content
    ber = bool(j.get("ber"))
    key, cert = load_key(j["key"]), load_cert(j["cert"])
    sid_cert = load_cert(j["sid_cert"]) if "sid_cert" in j else cert
    certs = [load_cert(p) for p in j["certs"]] if "certs" in j else [cert]
    digest_oid = OID_SHA256_RSA if j.get("digest") == "sha256WithRSAEncryption" else OID_SHA256
    with_attrs = j.get("signed_attrs", True)
    infos = [signer_info(key, sid_cert, signed, digest_oid, with_attrs)]
    for extra in j.get("extra_signers", []):
        infos.append(signer_info(load_key(extra["key"]), load_cert(extra["cert"]), signed, digest_oid, with_attrs))
    if j.get("detached"):
        encap = seq(oid(OID_DATA), ber=ber)
    elif ber:
        chunks = b"".join(octets(content[i:i + 100]) for i in range(0, len(content), 100))
        encap = seq(oid(OID_DATA), tlv(0xA0, tlv(0x24, chunks, True), True), ber=True)
    else:
        encap = seq(oid(OID_DATA), tlv(0xA0, octets(content)))
    bag = tlv(0xA0, b"".join(cert_der(c) for c in certs), ber) if certs else b""
    signed_data = seq(integer(1), der_set(alg(OID_SHA256)), encap, bag, tlv(0x31, b"".join(infos)), ber=ber)
    ci = seq(oid(OID_SIGNED_DATA), tlv(0xA0, signed_data, ber), ber=ber)
    return base64.b64encode(ci).decode()


def job_standard(j):
    content = base64.b64decode(j["content_b64"])
    b = pkcs7.PKCS7SignatureBuilder().set_data(content).add_signer(load_cert(j["cert"]), load_key(j["key"]), hashes.SHA256())
    out = b.sign(serialization.Encoding.DER, [pkcs7.PKCS7Options.Binary])
    return base64.b64encode(out).decode()


def job_raw(j):
    return base64.b64encode(rsa_sign(load_key(j["key"]), base64.b64decode(j["content_b64"]))).decode()


def job_leaf(j):
    issuer_key, issuer = load_key(j["issuer_key"]), load_cert(j["issuer_cert"])
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.timezone.utc)
    san = j["san"]
    b = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Svc Tests"), x509.NameAttribute(NameOID.COMMON_NAME, san[-1])]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in san]), critical=False)
    )
    if j.get("aia"):
        b = b.add_extension(
            x509.AuthorityInformationAccess([x509.AccessDescription(AuthorityInformationAccessOID.CA_ISSUERS, x509.UniformResourceIdentifier(j["aia"]))]),
            critical=False,
        )
    c = b.sign(issuer_key, hashes.SHA256())
    return {
        "cert": c.public_bytes(serialization.Encoding.PEM).decode(),
        "key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
    }


OPS = {"pkcs7": job_pkcs7, "standard": job_standard, "raw": job_raw, "leaf": job_leaf}


def main():
    jobs = json.load(sys.stdin)["jobs"]
    json.dump({"results": [OPS[j["op"]](j) for j in jobs]}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
