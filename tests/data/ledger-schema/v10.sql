-- A ledger at schema version 10 as released sitemapd wrote it.
CREATE TABLE "urls" (
   "id" INTEGER PRIMARY KEY,
   "loc" TEXT NOT NULL,
   "source_id" INTEGER,
   "status" TEXT NOT NULL,
   "reason" TEXT,
   "page_reason" TEXT,
   "content_hash" TEXT,
   "source_time" TEXT,
   "lastmod" TEXT NOT NULL,
   "first_seen" TEXT NOT NULL,
   "change_count" INTEGER NOT NULL,
   "title" TEXT,
   "file_key" TEXT,
   "shard" INTEGER,
   "entry_bytes" INTEGER
, "published" TEXT, "language" TEXT, "news_title" TEXT, "article" INTEGER, "alternates" TEXT, "extra" TEXT, "bytes_hash" TEXT, "fp_settings" TEXT, "fp_fallback" INTEGER, "published_stated" INTEGER);
CREATE TABLE "sources" (
   "id" INTEGER PRIMARY KEY,
   "name" TEXT NOT NULL
);
CREATE UNIQUE INDEX "idx_sources_name"
    ON "sources" ("name");
CREATE TABLE "shards" (
   "id" INTEGER PRIMARY KEY,
   "url_count" INTEGER,
   "bytes" INTEGER,
   "lastmod" TEXT,
   "dirty" INTEGER
);
CREATE TABLE "journal" (
   "seq" INTEGER PRIMARY KEY,
   "url_id" INTEGER,
   "kind" TEXT,
   "at" TEXT
);
CREATE TABLE "cursors" (
   "name" TEXT PRIMARY KEY,
   "value" TEXT
);
CREATE TABLE "rejects" (
   "source" TEXT,
   "item" TEXT,
   "reason" TEXT,
   "at" TEXT,
   PRIMARY KEY ("source", "item")
);
CREATE TABLE "published" (
   "name" TEXT PRIMARY KEY,
   "sha256" TEXT,
   "bytes" INTEGER,
   "at" TEXT
, "mtime_ns" INTEGER);
CREATE UNIQUE INDEX urls_loc ON urls (loc);
CREATE INDEX urls_shard ON urls (shard, id) WHERE shard IS NOT NULL;
CREATE INDEX urls_published ON urls (published) WHERE article = 1;
CREATE TABLE "crawls" (
   "crawler" TEXT,
   "page" INTEGER,
   "fetched_at" TEXT,
   PRIMARY KEY ("crawler", "page")
);
CREATE TABLE alternate_links (href TEXT NOT NULL, url_id INTEGER NOT NULL, PRIMARY KEY (href, url_id)) WITHOUT ROWID;
CREATE INDEX alternate_links_url ON alternate_links (url_id);
CREATE TABLE "feed_pages" (
   "number" INTEGER PRIMARY KEY,
   "low_seq" INTEGER,
   "high_seq" INTEGER,
   "opened_at" TEXT,
   "filled_at" TEXT
);
CREATE TABLE "crawl_answers" (
   "loc" TEXT PRIMARY KEY,
   "status" INTEGER,
   "crawler" TEXT,
   "at" TEXT
);
CREATE TABLE list_chunks (source_id INTEGER NOT NULL, pos INTEGER NOT NULL, digest BLOB NOT NULL, first_line INTEGER NOT NULL, rejects INTEGER NOT NULL, end_byte INTEGER, PRIMARY KEY (source_id, pos)) WITHOUT ROWID;
CREATE TABLE list_chunk_urls (source_id INTEGER NOT NULL, digest BLOB NOT NULL, ids BLOB NOT NULL, first_id INTEGER, id_count INTEGER, PRIMARY KEY (source_id, digest)) WITHOUT ROWID;
CREATE INDEX urls_extra ON urls (shard) WHERE extra IS NOT NULL;
CREATE INDEX urls_seeded ON urls (source_id) WHERE status = 'seeded';
CREATE INDEX urls_excluded ON urls (source_id) WHERE status = 'excluded';
CREATE TABLE list_repeats (source_id INTEGER NOT NULL, url_id INTEGER NOT NULL, PRIMARY KEY (source_id, url_id)) WITHOUT ROWID;
CREATE INDEX journal_url ON journal (url_id);
CREATE TABLE journal_runs (seq INTEGER PRIMARY KEY, first_id INTEGER NOT NULL, last_id INTEGER NOT NULL, at TEXT NOT NULL);
CREATE VIEW journal_entries AS SELECT seq, url_id, kind, at FROM journal UNION ALL SELECT r.seq + u.id - r.first_id, u.id, 'new', r.at FROM journal_runs r JOIN urls u ON u.id BETWEEN r.first_id AND r.last_id;
