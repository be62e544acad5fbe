#!/bin/bash
# verify_incr.sh: `sluice verify` on a finished incremental/snapshot_only replica that differs from the source
cd /work/probe13; . db/env; mkdir -p vf; rm -f vf/*
./my.sh -e "DROP DATABASE IF EXISTS vf; CREATE DATABASE vf; CREATE TABLE vf.t (id INT PRIMARY KEY, v INT, updated_at DATETIME NOT NULL DEFAULT NOW() ON UPDATE NOW(), KEY(updated_at)); INSERT INTO vf.t (id,v,updated_at) VALUES (1,1,NOW()-INTERVAL 1 HOUR),(2,2,NOW()-INTERVAL 1 HOUR);"
cat > vf/sluice.toml <<TOML
[source]
port = $SLUICE_TEST_MYSQL_PORT
user = "sluice"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
tables = ["vf.*"]
tls = "disabled"
[table."vf.t"]
mode = "incremental"
[sink]
path = "/work/probe13/vf/out.sqlite"
TOML
bin/sluice run --config vf/sluice.toml >/dev/null 2>&1; sleep 2.2; bin/sluice run --config vf/sluice.toml 2>&1 | grep "vf.t: [0-9]"
sqlite3 vf/out.sqlite 'UPDATE "vf.t" SET v=999 WHERE id=1; DELETE FROM "vf.t" WHERE id=2'
echo "--- verify (replica tampered: 1 differing, 1 missing)"; bin/sluice verify --config vf/sluice.toml; echo "verify rc=$?"
echo "--- compare"; bin/sluice compare --config vf/sluice.toml; echo "compare rc=$?"
