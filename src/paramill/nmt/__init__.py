"""NMT stage: SentencePiece subwords, OpenNMT-py training, CTranslate2 conversion and
back-translation of bitext shards into candidate tables."""
