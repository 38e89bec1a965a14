"""``paramill nmt``: subwords, translation models, back-translation."""

import argparse

from paramill.run import device
from paramill.run.commands import Group, arg, need, out

group = Group("nmt", "subwords, translation models, back-translation", docs="methods/back-translation.md")
SPM_ARGS = (arg("--src-spm", help="source SentencePiece model (default: from the bundle)"),
            arg("--tgt-spm", help="target SentencePiece model (default: from the bundle)"))


@group.verb(
    "spm", "train a SentencePiece model on one side of bitext shards",
    arg("shards", nargs="+", help="bitext shards (Parquet)", table="bitext"),
    need("--lang", "the side to train on", choices=["cs", "en"]),
    out("--model", "output .model (its .vocab is written beside it)"), settings="nmt.spm",
    example='paramill nmt spm work/shards/grammar --lang en --model work/nmt/spm/en.model')
def spm(args: argparse.Namespace) -> int | str:
    from paramill.nmt.subwords import SubwordSettings, train
    size = train(args.shards, args.lang, args.model, SubwordSettings.from_dict(args.settings),
                 rule=args.rule)
    return f"{args.lang}: {size} pieces in {args.model}"


@group.verb(
    "data", "write OpenNMT-py training text (train/valid, cs/en)",
    arg("shards", nargs="+", help="bitext shards (Parquet)", table="bitext"), out("--out", "output directory"),
    description="Pairs go to validation by a seeded hash of pair_id (nmt.valid_size of them, "
                "nmt.seed); the settings are the nmt section's valid_size and seed.",
    settings="nmt",
    example='paramill nmt data work/shards/grammar --out work/nmt/data')
def data(args: argparse.Namespace) -> int | str:
    from paramill.nmt.data import write_training_text
    stats = write_training_text(args.shards, args.out, args.settings["valid_size"],
                                args.settings["seed"], rule=args.rule)
    return f"{stats['train']} training and {stats['valid']} validation pairs"


@group.verb(
    "train", "train (or resume) a transformer with OpenNMT-py",
    need("--direction", "translation direction", choices=["cs-en", "en-cs"]),
    need("--data", "directory from `paramill nmt data`"),
    need("--src-spm", "source SentencePiece model"),
    need("--tgt-spm", "target SentencePiece model"),
    need("--work", "training workspace (checkpoints; kept for resuming)"),
    out("--out", "output: the final checkpoint (.pt)"),
    description="Builds the vocabulary and trains one direction with onmt_train on all visible "
                "GPUs (CPU when none), resuming from the last checkpoint in --work after a "
                "killed job. SIGTERM (a SLURM time limit, scancel) saves a checkpoint after the "
                "step it comes in and ends with status 143 (one GPU or the CPU: OpenNMT-py's "
                "processes for several GPUs end as before, at their last saved step). A resumed "
                "run reads the training corpus on from where the checkpoint's run was (recorded "
                "in model_step_N.pt.position.json; the bucket in progress is read again), where "
                "OpenNMT-py reads it from the first line.",
    settings={"settings": "nmt.train", "model_settings": "nmt.model"},
    example='paramill nmt train --direction cs-en --data work/nmt/data --src-spm work/nmt/spm/cs.model --tgt-spm work/nmt/spm/en.model --work work/nmt/cs-en/train --out work/nmt/cs-en/model.pt')
def train(args: argparse.Namespace) -> int | str:
    from paramill.nmt.train import ModelSettings, NmtTrainSettings, train
    summary = train(args.direction, args.data, args.src_spm, args.tgt_spm, args.out, args.work,
                    ModelSettings.from_dict(args.model_settings),
                    NmtTrainSettings.from_dict(args.settings), rule=args.rule)
    return f"{args.direction}: {summary}"


@group.verb(
    "convert", "convert an OpenNMT-py checkpoint to CTranslate2",
    need("--checkpoint", "OpenNMT-py checkpoint (.pt)"),
    need("--src-spm", "source SentencePiece model (bundled)"),
    need("--tgt-spm", "target SentencePiece model (bundled)"),
    out("--out", "output model bundle directory"),
    description="The settings are the nmt section's quantization (null: none).",
    settings="nmt",
    example='paramill nmt convert --checkpoint work/nmt/cs-en/model.pt --src-spm work/nmt/spm/cs.model --tgt-spm work/nmt/spm/en.model --out work/nmt/cs-en/ct2')
def convert(args: argparse.Namespace) -> int | str:
    from paramill.nmt.convert import convert
    convert(args.checkpoint, args.src_spm, args.tgt_spm, args.out,
            args.settings["quantization"], rule=args.rule)
    return f"{args.out}"


@group.verb(
    "translate", "back-translate one bitext shard with CTranslate2",
    need("--shard", "bitext shard (Parquet)", table="bitext"),
    need("--model", "CTranslate2 model dir or paramill bundle"),
    arg("--bwd-model", help="EN->CS CTranslate2 model (method sample: dual scoring)"), *SPM_ARGS,
    out("--out", "output candidate table (Parquet)"),
    description="Translate the Czech side of a shard into English (beam, k-best, or ParaBank "
                "2's constrained sampling with dual scoring and clustering) and write the "
                "candidate table.",
    settings={"settings": "nmt.translate", "sample_settings": "nmt.sample"},
    memory=("nmt.translate.batch_size", "nmt.translate.batch_type", "nmt.translate.beam_size",
            "nmt.sample.block", "nmt.sample.batch_size"),
    example='paramill nmt translate --shard work/shards/grammar/shard-00000.parquet --model work/nmt/cs-en/ct2 --out work/candidates/grammar/shard-00000.parquet')
def translate(args: argparse.Namespace) -> int | str:
    from paramill.nmt.convert import bundle_spm
    from paramill.nmt.translate import TranslateSettings, translate_shard
    settings = TranslateSettings.from_dict(args.settings)
    src_spm, tgt_spm = args.src_spm, args.tgt_spm
    if not (src_spm and tgt_spm):
        found = bundle_spm(args.model)
        if found is None:
            raise ValueError(f"{args.model} holds no SentencePiece models: give --src-spm and --tgt-spm")
        src_spm, tgt_spm = found
    if settings.method == "sample":  # ParaBank 2: constrained sampling, dual scoring, clusters
        from paramill.nmt.sampling import SampleSettings, sample_shard

        if not args.bwd_model:
            raise ValueError("method sample needs --bwd-model (the EN->CS model, for dual scoring)")
        stats = sample_shard(args.shard, args.model, args.bwd_model, src_spm, tgt_spm, args.out,
                             SampleSettings.from_dict(args.sample_settings),
                             threads=device.threads(), rule=args.rule)
    else:
        stats = translate_shard(args.shard, args.model, src_spm, tgt_spm, args.out, settings,
                                threads=device.threads(), rule=args.rule)
    return f"{args.shard}: {stats}"


@group.verb(
    "diversity", "diversity of paraphrases by rank (ParaBank 2 Tables 1-2)",
    arg("candidates", nargs="+", help="candidate tables", table="candidates"),
    need("--spm", "English SentencePiece model (pieces for BLEU/bags)"),
    out("--tsv", "output table by rank"), out("--json", "output summary"),
    out("--png", required=False, help="bar plot by rank"),
    example='paramill nmt diversity work/candidates/grammar --spm work/nmt/spm/en.model --tsv results/nmt/diversity.tsv --json results/nmt/diversity.json')
def diversity(args: argparse.Namespace) -> int | str:
    from paramill.nmt.diversity import write_diversity
    from paramill.nmt.diversity import diversity_plot
    result = write_diversity(args.candidates, args.spm, args.tsv, args.json, args.png,
                             plot=diversity_plot, rule=args.rule, workers=device.threads())
    return f"{result['by_rank']} collective {result['collective']}"


@group.verb(
    "stats", "summarise candidate tables",
    arg("candidates", nargs="+", help="candidate tables", table="candidates"),
    out("--out", "output JSON"),
    example='paramill nmt stats work/candidates/grammar --out results/nmt/backtranslation.json')
def stats(args: argparse.Namespace) -> int | str:
    from paramill.nmt.stats import write_summary
    return f"{write_summary(args.candidates, args.out, rule=args.rule)}"
