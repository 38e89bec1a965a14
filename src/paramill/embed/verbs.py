"""``paramill embed``: train and use paraphrastic sentence embeddings."""

import argparse

from paramill.run.commands import Group, arg, need, out

group = Group("embed", "paraphrastic sentence embeddings", docs="methods/embeddings.md")


@group.verb(
    "train", "train an encoder on paraphrase pairs",
    arg("pairs", nargs="+", help="paraphrase pair files"), out("--out", "output model (.pt)"),
    out("--resume", required=False, help="the checkpoint, written at each epoch's end and within "
        "epochs every checkpoint_minutes (default: <out>.resume.pt)"),
    description="Margin loss with hardest negatives from a mega-batch (Wieting et al.). Pairs: "
                "Parquet s1/s2 or candidate tables (en_ref/candidate, rank 1), or TSV s1<TAB>s2 (a first line "
                "of column names, s1/s2 or sentence1/sentence2, is skipped). Resumes a killed job from "
                "--resume: after its epoch, or within it after the mega-batch of its last checkpoint. "
                "SIGTERM (a SLURM time limit, scancel) writes a checkpoint at the end of the "
                "mega-batch it comes in and ends with status 143; run again, it resumes there.",
    settings={"settings": "embed.train", "spec": "embed.model"}, launch=True,
    memory=("embed.model.dim", "embed.train.batch_size", "embed.train.megabatch",
            "embed.train.buffer_pairs", "embed.train.max_chars"),
    example='paramill embed train pairs.tsv --out model.pt --spec \'{"components": ["word", "trigram"]}\'')
def train(args: argparse.Namespace) -> int | str:
    from paramill.embed.data import PairSource
    from paramill.embed.model import ModelSpec
    from paramill.embed.train import EmbedTrainSettings, train
    settings = EmbedTrainSettings.from_dict(args.settings)
    pairs = PairSource.from_files(args.pairs, max_pairs=settings.max_pairs)
    summary = train(pairs, args.out, ModelSpec.from_dict(args.spec), settings, resume=args.resume,
                    inputs=args.pairs, rule=args.rule)
    return f"{summary}"


@group.verb(
    "encode", "embed sentences (one a line) into a .npy matrix",
    need("--model", "a model from `paramill embed train`"),
    need("--input", "text file, one sentence a line"),
    out("--out", "output .npy (float32, n x dim, row i the vector of line i)"),
    arg("--batch-size", type=int, default=256,
        help="sentences per batch (halved where a batch does not fit in the GPU's memory)"),
    description="Embed sentences (one a line) into a .npy matrix. The file is read twice, a "
                "block of lines at a time: once to check it (a line that is not UTF-8 or too "
                "long names the file and line, before anything is written) and count its "
                "lines, then to encode it, each block's rows appended to the .npy under a "
                "temporary name, renamed when complete: memory holds a block, not the corpus. "
                "On a GPU when one is visible.",
    example='paramill embed encode --model work/embed/word/model.pt --input sentences.txt --out vectors.npy')
def encode(args: argparse.Namespace) -> int | str:
    from paramill.embed.encoding import encode_file
    rows, dim, halved = encode_file(args.model, args.input, args.out, args.batch_size)
    shrunk = f" (batch size halved {len(halved)}x for the GPU's memory)" if halved else ""
    return f"{rows} sentences x {dim} dims in {args.out}{shrunk}"


@group.verb(
    "export", "write a model as a sentence-transformers directory",
    arg("model", help="a model from `paramill embed train`"),
    out("out", help="output directory"),
    description="SentenceTransformer(OUT, trust_remote_code=True) then loads it offline and "
                "encodes to the same vectors as the paramill model (the module class is "
                "paramill's, so paramill must be installed where it is loaded; sentence-transformers "
                "is one of paramill's dependencies).",
    example='paramill embed export work/embed/word/model.pt my-model')
def export(args: argparse.Namespace) -> int | str:
    from paramill.embed.st import export
    return f"{export(args.model, args.out, rule=args.rule)}"
