"""Arrow schema of the candidate table (DESIGN.md), shared by back-translation and sampling."""

import pyarrow as pa

#: One row per candidate paraphrase of an English reference.
CANDIDATES = pa.schema([
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("candidate_id", pa.string(), nullable=False),  # pair_id:method:rank, for joins
    pa.field("en_ref", pa.string(), nullable=False),
    pa.field("candidate", pa.string(), nullable=False),
    pa.field("method", pa.string(), nullable=False),  # beam | kbest | sample
    pa.field("rank", pa.int32(), nullable=False),  # 1 = best of this source
    pa.field("fwd_nll", pa.float32()),  # CS->EN NLL per target subword (EOS included)
    pa.field("bwd_nll", pa.float32()),  # EN->CS NLL per source subword (dual scoring)
    pa.field("n_tokens", pa.int32()),  # target subword pieces, EOS excluded
    pa.field("constraint_set", pa.int32()),  # negative-constraint set (sampling)
    pa.field("cluster", pa.int32()),  # Levenshtein cluster (sampling)
])
