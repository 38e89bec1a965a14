import pytest

from paramill.bitext.readers import CorpusSpec, read_corpus
from paramill.errors import InputError


def read(fmt, max_line_bytes=65536, **spec):
    """The rows of a bitext corpus in layout ``fmt`` with settings ``spec``."""
    return read_corpus(CorpusSpec.from_dict("c", {"format": fmt, **spec}), max_line_bytes)


def pairs(rows):
    return [(r.line_no, r.cs, r.en, r.reason) for r in rows]


def test_czeng1_reads_the_czech_and_english_columns(write_file):
    path = write_file("c.tsv.gz", ["b1-1\t0.95\tMuž čte.\tThe man reads.",
                                   "b1-2\t0.41\tŽena píše.\tThe woman writes."], "gz")
    assert pairs(read("czeng1", path=str(path))) == [(1, "Muž čte.", "The man reads.", None),
                                             (2, "Žena píše.", "The woman writes.", None)]


def test_czeng1_wrong_column_count_is_a_rejected_row(write_file):
    path = write_file("c.tsv", ["id\t0.9\tjen česky", "id\t0.9\tcs\ten\textra", "id\t1\tcs\ten"])
    rows = list(read("czeng1", path=str(path)))
    assert [r.reason for r in rows] == ["column_count", "column_count", None]
    assert rows[0].detail == "expected 4 tab-separated columns, found 3"


def test_czeng2_with_configured_column_names(write_file):
    path = write_file("c2.tsv.xz", ["0.8\tThe cat.\tKočka.\tnews"], "xz")
    spec = CorpusSpec.from_dict("c2", {"format": "czeng2", "path": str(path),
                                       "columns": ["score", "en", "cs", "domain"]})
    assert pairs(read_corpus(spec)) == [(1, "Kočka.", "The cat.", None)]


def test_tsv_with_header_picks_columns_by_name(write_file):
    path = write_file("h.tsv.zst", ["en\tid\tcs", "Hello.\t7\tAhoj."], "zst")
    assert pairs(read("tsv", path=str(path), header=True)) == [(2, "Ahoj.", "Hello.", None)]


def test_tsv_header_without_cs_column_is_an_error(write_file):
    path = write_file("h.tsv", ["english\tczech", "Hello.\tAhoj."])
    with pytest.raises(InputError, match=r"h.tsv:1: columns .* no `cs`"):
        list(read("tsv", path=str(path), header=True))


def test_a_header_line_without_header_true_is_an_error_not_a_pair(write_file):
    """A file whose first line names its columns (``cs \t en``), read without ``header``,
    made that line a sentence pair "cs" -> "en"."""
    path = write_file("h.tsv", ["cs\ten", "Ahoj.\tHello."])
    with pytest.raises(InputError, match=r"h.tsv:1: this line holds column names \(cs, en\), "
                                         r"which would be read as a row: set `header: true`"):
        list(read("tsv", path=str(path)))
    assert pairs(read("tsv", path=str(path), header=True)) == [(2, "Ahoj.", "Hello.", None)]
    # the configured columns, given again as the first line
    path = write_file("c.tsv", ["id\ten\tcs", "7\tHello.\tAhoj."])
    with pytest.raises(InputError, match=r"c.tsv:1: this line holds column names \(id, en, cs\)"):
        list(read("tsv", path=str(path), columns=["id", "en", "cs"]))
    # a first line of text is read as a row, whatever it holds
    path = write_file("t.tsv", ["cs\tHello.", "en\ten"])
    assert pairs(read("tsv", path=str(path))) == [(1, "cs", "Hello.", None), (2, "en", "en", None)]


def test_moses_pairs_lines_and_strips_crlf(write_file):
    cs = write_file("c.cs.bz2", b"Ahoj.\r\nNazdar.\r\n", "bz2")
    en = write_file("c.en", ["Hello.", "Hi."])
    assert pairs(read("moses", cs=str(cs), en=str(en))) == [(1, "Ahoj.", "Hello.", None),
                                                   (2, "Nazdar.", "Hi.", None)]


def test_moses_sides_of_different_length_name_both_files_and_the_line(write_file):
    cs = write_file("m.cs", ["a", "b", "c"])
    en = write_file("m.en", ["a", "b"])
    with pytest.raises(InputError) as err:
        list(read("moses", cs=str(cs), en=str(en)))
    assert err.value.path == str(cs) and err.value.line == 3
    assert str(en) in str(err.value) and "ended after 2 lines" in str(err.value)


def test_invalid_utf8_is_rejected_with_the_byte_offset(write_file):
    path = write_file("u.tsv", [b"id\t0.9\tMu\xff\xfe.\tMan.", b"id\t0.9\tok\tok"])
    rows = list(read("czeng1", path=str(path)))
    assert rows[0].reason == "invalid_utf8" and rows[0].detail == "invalid UTF-8 at byte offset 9"
    assert "\ufffd" in rows[0].cs  # shown with replacement characters
    assert rows[1].reason is None and rows[1].line_no == 2


def test_a_line_with_a_nul_byte_is_not_text_in_every_reader(write_file, tmp_path):
    """NUL is valid UTF-8 but never text: a run of zeros a crash or a full disk left in a
    file, or a binary file. Cleaning would drop the NULs and keep what is around them, so the
    line is a rejected row (``not_text``, with the byte's offset) in a corpus, and an error
    naming file and line where one bad line spoils the set (an STS set, embed train TSV)."""
    from paramill.embed.data import PairSource
    from paramill.evaluate.sts import read as read_sts
    from paramill.formats import twitter_url

    path = write_file("z.tsv", [b"id\t0.9\tMu\x00\x00\x00.\tMan.", b"id\t0.9\tok\tok"])
    rows = list(read("czeng1", path=str(path)))
    assert rows[0].reason == "not_text" and rows[0].detail.startswith("NUL byte at byte offset 9:")
    assert rows[1].reason is None and rows[1].line_no == 2
    cs = write_file("m.cs", [b"Dobr\xc3\xbd den.", b"Ahoj."])
    en = write_file("m.en", [b"Good day.", b"\x00\x00Hi."])
    rows = list(read("moses", cs=str(cs), en=str(en)))
    assert [(r.reason, r.detail) for r in rows] == [
        (None, None), ("not_text", "en: NUL byte at byte offset 0: not text (a binary file, or "
                                   "a block of zeros a crash left)")]
    zeros = write_file("zeros.tsv", [b"\x00" * 4096])  # nothing but a block of zeros
    with pytest.raises(InputError, match=r"zeros.tsv:1: no line could be read .*\(not_text 1\)"):
        list(read("czeng1", path=str(zeros)))
    sts = write_file("sts.tsv", [b"4.0\tA man.\tA man.", b"1.0\tA d\x00og.\tA cat."])
    with pytest.raises(InputError, match=r"sts.tsv:2: NUL byte at byte offset 7"):
        read_sts("sts", 2012, "tsv", sts)
    labelled = write_file("url.tsv", [b"A man.\tA guy.\t(5, 6)\tu", b"A d\x00og.\tA cat.\t(0, 6)\tu"])
    with pytest.raises(InputError, match=r"url.tsv:2: NUL byte at byte offset 3"):
        twitter_url.labelled(str(labelled))
    pairs = write_file("pairs.tsv", [b"A man.\tA guy.", b"A d\x00og.\tA cat."])
    with pytest.raises(InputError, match=r"pairs.tsv:2: NUL byte at byte offset 3"):
        list(PairSource.from_files([pairs]))


def test_a_one_megabyte_line_is_rejected_and_reading_goes_on(write_file):
    big = b"id\t0.9\t" + b"x" * (1 << 20) + b"\ty"
    path = write_file("big.tsv.gz", [b"id\t1\ta\tb", big, b"id\t1\tc\td"], "gz")
    rows = list(read("czeng1", path=str(path), max_line_bytes=65536))
    assert [(r.line_no, r.reason) for r in rows] == [(1, None), (2, "line_too_long"), (3, None)]
    assert rows[2].cs == "c"


def test_truncated_gzip_is_an_error_naming_file_and_line(write_file, tmp_path):
    full = write_file("t.tsv.gz", [f"id\t1\tradek {i}\tline {i}" for i in range(5000)], "gz")
    cut = tmp_path / "cut.tsv.gz"
    cut.write_bytes(full.read_bytes()[:-200])
    with pytest.raises(InputError) as err:
        list(read("czeng1", path=str(cut)))
    assert err.value.path == str(cut) and err.value.line is not None and err.value.line > 1
    assert "truncated or corrupt" in str(err.value)


def test_empty_file_is_an_error(write_file):
    path = write_file("empty.tsv", b"")
    with pytest.raises(InputError, match="empty.tsv: file is empty"):
        list(read("czeng1", path=str(path)))


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        list(read("czeng1", path=str(tmp_path / "nope.tsv")))


def test_spec_checks_its_fields():
    with pytest.raises(ValueError, match="bitext.corpora.m: format moses needs `en`"):
        CorpusSpec.from_dict("m", {"format": "moses", "cs": "a"})
    with pytest.raises(ValueError, match=r"bitext.corpora.t: columns \['a', 'b'\] have no `cs` and `en`"):
        CorpusSpec.from_dict("t", {"format": "tsv", "path": "x", "columns": ["a", "b"]})
    assert CorpusSpec.from_dict("m", {"format": "moses", "cs": "a", "en": "b"}).source_file == "a;b"
