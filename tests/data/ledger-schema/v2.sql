-- A ledger at schema version 2 as released sitemapd wrote it (its tables made by sqlite-utils).
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
);
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
