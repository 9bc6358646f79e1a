#!/bin/sh
# Regenerates the OpenPGP fixtures beside this script with GnuPG and a throwaway home, so the
# tests run against signatures made by the real tool rather than by the code under test.
# Keys are new on every run: rerun the unit tests after regenerating.
set -eu

out=$(cd "$(dirname "$0")" && pwd)
GNUPGHOME=$(mktemp -d)
export GNUPGHOME
work=$(mktemp -d)
cleanup() {
    gpgconf --kill all >/dev/null 2>&1 || true
    rm -rf "$GNUPGHOME" "$work"
}
trap cleanup EXIT

# A frozen clock makes key and signature times fixed, so the tests can name them.
created=1690000000
gpg() {
    command gpg --batch --yes --quiet --pinentry-mode loopback --passphrase '' \
        --trust-model always --faked-system-time "$created!" "$@"
}

digest=sha256:5e7d8c1f4b2a96e03d1c8f7a6b5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e
other_digest=sha256:0000000000000000000000000000000000000000000000000000000000000001
reference=quay.io/openshift-release-dev/ocp-release:4.2.0

# The release key signs with its RSA primary key; the other key is an Ed25519 primary that only
# certifies, with an Ed25519 signing subkey, so both ways of signing are covered.
gpg --quick-gen-key 'windlass test <release@windlass.dev>' rsa2048 sign never
gpg --quick-gen-key 'windlass other <other@windlass.dev>' ed25519 cert never
other_fpr=$(command gpg --batch --with-colons --trust-model always --list-keys other@windlass.dev | awk -F: '$1 == "fpr" { print $10; exit }')
gpg --quick-add-key "$other_fpr" ed25519 sign never

gpg --armor --export release@windlass.dev >"$out/release-key.asc"
gpg --armor --export other@windlass.dev >"$out/other-key.asc"
# Both keys in one armored block, as one export of several keys writes them.
gpg --armor --export release@windlass.dev other@windlass.dev >"$out/both-keys.asc"

payload() { # type digest
    printf '{"critical":{"identity":{"docker-reference":"%s"},"image":{"docker-manifest-digest":"%s"},"type":"%s"},"optional":{"creator":"windlass make-fixtures.sh","timestamp":1690000000}}' \
        "$reference" "$2" "$1"
}
payload 'atomic container signature' "$digest" >"$work/good.json"
payload 'atomic container signature' "$other_digest" >"$work/wrong-digest.json"
payload 'cosign container image signature' "$digest" >"$work/wrong-type.json"

# Binary signed messages with GnuPG's default compression, as release signatures are made.
gpg --local-user release@windlass.dev --sign --output "$out/signature-1" "$work/good.json"
gpg --local-user other@windlass.dev --sign --output "$out/signature-ed25519" "$work/good.json"
gpg --local-user release@windlass.dev --sign --output "$out/signature-wrong-digest" "$work/wrong-digest.json"
gpg --local-user release@windlass.dev --sign --output "$out/signature-wrong-type" "$work/wrong-type.json"

# Expires a day after it was made.
gpg --local-user release@windlass.dev --sign --default-sig-expire 1d --output "$out/signature-expiring" "$work/good.json"

# Tampered: uncompressed, so that the flipped byte lands in the literal data (the JSON) and the
# message still parses; only the signature check can then catch it. The timestamp's last digit
# becomes 1.
gpg --local-user release@windlass.dev --sign --compress-algo none --output "$work/tampered" "$work/good.json"
offset=$(grep -obUa '1690000000' "$work/tampered" | head -n 1 | cut -d: -f1)
cp "$work/tampered" "$out/signature-tampered"
printf '1' | dd of="$out/signature-tampered" bs=1 seek=$((offset + 9)) conv=notrunc status=none

echo "fixtures written to $out"
