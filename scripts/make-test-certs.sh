#!/usr/bin/env bash
# Test certificates for the TLS tests (never for production):
#
#   scripts/make-test-certs.sh DIR
#
# writes into DIR (keys 0600, EC P-256, valid 10 years):
#   ca.pem ca.key              a self-signed test CA ("sluice test CA")
#   server.pem server.key      server certificate signed by ca.pem for 127.0.0.1 / localhost
#   wronghost.pem wronghost.key  signed by ca.pem, but for wrong.invalid only (identity check fails)
#   client.pem client.key      a client certificate signed by ca.pem (CN sluice-client)
#   other-ca.pem               an unrelated CA that signed none of the above (chain check fails)
set -euo pipefail
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
cd "$dir"
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() {  # ca NAME CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

leaf() {  # leaf NAME CN SAN EKU
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s\n' \
    "$4" "${3:+subjectAltName=$3}" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" \
    -days 3650 -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

ca ca "sluice test CA"
ca other-ca "unrelated test CA"
leaf server 127.0.0.1 "IP:127.0.0.1,DNS:localhost" serverAuth
leaf wronghost wrong.invalid "DNS:wrong.invalid" serverAuth
leaf client sluice-client "" clientAuth
chmod 644 ./*.pem
