-- Keyword search that does not count the bank: postings of live turns and their statistics, kept by
-- every write in its own transaction (hindsight.episodic.keyword). Existing live turns are carried over.

-- Per bank: live turns, their total length in terms, and the newest time (an upper bound for decay).
CREATE TABLE keyword_banks (
    bank_id text        PRIMARY KEY,
    turns   bigint      NOT NULL,
    terms   bigint      NOT NULL,
    newest  timestamptz NOT NULL
);

-- Per bank and term: live turns holding it (df) and the highest frequency it ever had in one (a bound).
CREATE TABLE keyword_terms (
    bank_id text    NOT NULL,
    term    text    NOT NULL,
    turns   bigint  NOT NULL,
    max_tf  integer NOT NULL,
    PRIMARY KEY (bank_id, term)
);

-- One row per live turn and term, with the term's frequency in the turn, the turn's length and time: a
-- turn is scored from these alone. impact = tf / length orders a term's postings best first.
CREATE TABLE keyword_postings (
    bank_id     text             NOT NULL,
    turn_id     text             NOT NULL,
    term        text             NOT NULL,
    tf          integer          NOT NULL,
    length      integer          NOT NULL,
    impact      double precision NOT NULL,
    occurred_at timestamptz      NOT NULL,
    PRIMARY KEY (bank_id, turn_id, term) INCLUDE (tf, length, occurred_at)
);

INSERT INTO keyword_postings (bank_id, turn_id, term, tf, length, impact, occurred_at)
    SELECT t.bank_id, t.id, e.lexeme, e.tf, t.term_count, e.tf::float8 / greatest(t.term_count, 1), t.occurred_at
    FROM turns t CROSS JOIN LATERAL (SELECT u.lexeme, coalesce(cardinality(u.positions), 1) AS tf
        FROM unnest(t.search_terms) u) e
    WHERE t.archived_at IS NULL;
INSERT INTO keyword_banks (bank_id, turns, terms, newest)
    SELECT bank_id, count(*), sum(term_count), max(occurred_at) FROM turns WHERE archived_at IS NULL
    GROUP BY bank_id;
INSERT INTO keyword_terms (bank_id, term, turns, max_tf)
    SELECT bank_id, term, count(*), max(tf) FROM keyword_postings GROUP BY bank_id, term;

-- A term's postings in four streams by tf (1, 2, 3, more), each best impact first, newest first among
-- equals: within a stream tf is (nearly) known, so what the unread rest can score is bounded tightly.
CREATE INDEX keyword_postings_rank_idx
    ON keyword_postings (bank_id, term, least(tf, 4), impact DESC, occurred_at DESC, turn_id)
    INCLUDE (tf, length);

-- Searches no longer count a bank's live turns; this index only tempted the planner, with stale
-- statistics, into reading a whole bank where a key lookup was meant.
DROP INDEX IF EXISTS turns_bank_live_idx;
