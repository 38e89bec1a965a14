"""Arrow schemas of the pair corpora: candidate shards (the back-translation contract plus
what a released corpus gives) and their rejected rows."""

import pyarrow as pa

from paramill.nmt.tables import CANDIDATES

#: A pair corpus's candidate shard: CANDIDATES (decoder columns null) + the given score/label.
PAIR_CANDIDATES = pa.schema([
    *CANDIDATES,
    pa.field("given_score", pa.float64()),  # the corpus's own score (ParaNMT, ParaBank 2, votes)
    pa.field("label", pa.int8()),  # 1 paraphrase, 0 not (Twitter URL votes, a tsv label)
])

#: Candidates (or unreadable lines) not kept, with the file and line they came from.
PAIR_REJECTED = pa.schema([
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("candidate_id", pa.string(), nullable=False),
    pa.field("corpus", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("line_no", pa.int64(), nullable=False),
    pa.field("en_ref", pa.string()),
    pa.field("candidate", pa.string()),
    pa.field("method", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("detail", pa.string()),
])
