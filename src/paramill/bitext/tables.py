"""Arrow schemas of the bitext data contracts (DESIGN.md)."""

import pyarrow as pa

#: A bitext shard: one row a sentence pair, traceable to its file and line.
BITEXT = pa.schema([
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("cs", pa.string()),
    pa.field("en", pa.string()),
    pa.field("corpus", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("line_no", pa.int64(), nullable=False),
])

#: Rows dropped by ingest or cleaning, with why (``reason``) and a human detail.
REJECTED = pa.schema([*BITEXT, pa.field("reason", pa.string(), nullable=False),
                      pa.field("detail", pa.string())])
