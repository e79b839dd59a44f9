-- simstore's schema at its newest revision, as SQLite records it after the migration
-- scripts ran on an empty file; a new file is made from it in one transaction.
-- Made by tests/data/make_sqlite_schema.py; tests/storage/test_migrations.py checks it.
CREATE TABLE simstore_alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT simstore_alembic_version_pkc PRIMARY KEY (version_num)
);
CREATE TABLE simstore_fingerprints (
	id INTEGER NOT NULL, 
	ns_id INTEGER NOT NULL, 
	"key" VARCHAR(255) NOT NULL, 
	fp BIGINT NOT NULL, 
	b0 INTEGER NOT NULL, 
	b1 INTEGER NOT NULL, 
	b2 INTEGER NOT NULL, 
	b3 INTEGER NOT NULL, 
	added_at DATETIME NOT NULL, 
	part INTEGER NOT NULL, 
	text TEXT, signature BLOB, band_keys BLOB, simhash_indexed BOOLEAN DEFAULT 1 NOT NULL, packed_text BLOB, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_simstore_fingerprints_key UNIQUE ("key", ns_id)
);
CREATE INDEX ix_simstore_fingerprints_part ON simstore_fingerprints (part, ns_id);
CREATE TABLE simstore_decisions (
	id INTEGER NOT NULL, 
	ns_id INTEGER NOT NULL, 
	"key" VARCHAR(255) NOT NULL, 
	fp BIGINT NOT NULL, 
	decided_at DATETIME NOT NULL, 
	part INTEGER NOT NULL, 
	inserted BOOLEAN NOT NULL, 
	duplicate_of VARCHAR(255), 
	distance SMALLINT, 
	measure VARCHAR(16), 
	score FLOAT, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_simstore_decisions_key UNIQUE ("key", ns_id)
);
CREATE INDEX ix_simstore_decisions_part ON simstore_decisions (part, ns_id);
CREATE INDEX ix_simstore_decisions_duplicate_of ON simstore_decisions (duplicate_of, ns_id);
CREATE TABLE simstore_settings (
	name VARCHAR(64) NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY (name)
);
CREATE TABLE simstore_minhash (
	band_key BIGINT NOT NULL, 
	ns_id INTEGER NOT NULL, 
	fp_id BIGINT NOT NULL, 
	CONSTRAINT pk_simstore_minhash PRIMARY KEY (band_key, ns_id, fp_id)
)
 WITHOUT ROWID

;
CREATE INDEX ix_simstore_fingerprints_b0_b1 ON simstore_fingerprints (b0, b1, ns_id, part, fp, simhash_indexed) WHERE simhash_indexed = 1;
CREATE INDEX ix_simstore_fingerprints_b1 ON simstore_fingerprints (b1, ns_id, part, fp, simhash_indexed) WHERE simhash_indexed = 1;
CREATE INDEX ix_simstore_fingerprints_b2_b3 ON simstore_fingerprints (b2, b3, ns_id, part, fp, simhash_indexed) WHERE simhash_indexed = 1;
CREATE INDEX ix_simstore_fingerprints_b3 ON simstore_fingerprints (b3, ns_id, part, fp, simhash_indexed) WHERE simhash_indexed = 1;
CREATE TABLE "simstore_namespaces" (
	id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, 
	name VARCHAR(255) NOT NULL, 
	preset_name VARCHAR(64) NOT NULL, 
	preset_version INTEGER NOT NULL, 
	preset_params TEXT NOT NULL, 
	band_layout VARCHAR(16) NOT NULL, 
	partition_seconds INTEGER NOT NULL, 
	created_with VARCHAR(32) NOT NULL, 
	created_at DATETIME NOT NULL, 
	write_count BIGINT DEFAULT '0' NOT NULL, 
	unsigned_rows BOOLEAN DEFAULT 1 NOT NULL, 
	minhash_scheme VARCHAR(64) NOT NULL, policy TEXT, 
	UNIQUE (name)
);
CREATE TABLE simstore_segments (
	segment BIGINT NOT NULL, 
	ns_id INTEGER NOT NULL, 
	part INTEGER NOT NULL, 
	texts INTEGER NOT NULL, 
	CONSTRAINT pk_simstore_segments PRIMARY KEY (segment, ns_id, part)
)
 WITHOUT ROWID

;
CREATE INDEX ix_simstore_segments_part ON simstore_segments (part, ns_id);
INSERT INTO sqlite_sequence (name, seq) VALUES ('simstore_namespaces', 0);
INSERT INTO simstore_alembic_version (version_num) VALUES ('0016_segments');
