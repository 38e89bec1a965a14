# Filters: held-out pairs train the KenLM, classifier and bootstrapped paraphrase-score
# models; every enabled filters scores every candidate shard (rule score_<filter>, one job
# per shard); selection applies bounds and writes the released corpus with its datasheet.


rule heldout:
    input:
        heldout_candidates,
    output:
        f"{WORK}/filters/heldout.parquet",
    params:
        settings=as_json(config["filters"]["heldout"]),
    log:
        f"{LOGS}/filters/heldout.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/heldout.tsv"
    threads: rule_threads("heldout")
    resources:
        **rule_resources("heldout", mem_mb=2000, runtime=60),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters heldout {input:q} --out {output:q}"
        " --settings {params.settings:q} > {log:q} 2>&1"


rule kenlm_train:
    input:
        f"{WORK}/filters/heldout.parquet",
    output:
        f"{WORK}/filters/kenlm/lm.binary",
    params:
        settings=as_json(config["filters"]["kenlm"]),
    log:
        f"{LOGS}/filters/kenlm_train.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/kenlm_train.tsv"
    threads: rule_threads("kenlm_train")
    resources:
        **rule_resources("kenlm_train", mem_mb=4000, runtime=60),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters kenlm --heldout {input:q} --out {output:q}"
        " --settings {params.settings:q} > {log:q} 2>&1"


rule classifier_train:
    input:
        f"{WORK}/filters/heldout.parquet",
    output:
        f"{WORK}/filters/classifier/model.pt",
    params:
        settings=as_json(stage_settings("filters", "classifier")),
    log:
        f"{LOGS}/filters/classifier_train.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/classifier_train.tsv"
    threads: rule_threads("classifier_train", 2)
    resources:
        **rule_resources("classifier_train", mem_mb=4000, runtime=240),
    conda:
        "../envs/nmt-gpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters classifier"
        " --heldout {input:q} --out {output:q} --settings {params.settings:q}"
        " --launch {CLASSIFIER_TRAIN_LAUNCH:q} > {log:q} 2>&1"


rule parascore_model:
    input:
        f"{WORK}/filters/heldout.parquet",
    output:
        f"{WORK}/filters/parascore/model.pt",
    params:
        spec=as_json({**config["embed"]["model"], "components": config["filters"]["parascore"]["components"]}),
        settings=embed_train_params(config["embed"]["train"]),
    log:
        f"{LOGS}/filters/parascore_model.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/parascore_model.tsv"
    threads: rule_threads("parascore_model", 2)
    resources:
        **rule_resources("parascore_model", resumes=True, mem_mb=8000, runtime=720),
    conda:
        "../envs/nmt-gpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} embed train {input:q}"
        " --out {output:q} --spec {params.spec:q} --settings {params.settings:q}"
        " --launch {EMBED_TRAIN_LAUNCH:q} > {log:q} 2>&1"


# The token stage: each shard tokenised once for length, overlap and BLEU (x-reads-tokens);
# no settings, so a changed filter setting re-scores only that filter.
rule tokens:
    input:
        lambda w: candidate_file(w.corpus, w.shard),
    output:
        f"{WORK}/tokens/{{corpus}}/{{shard}}.parquet",
    log:
        f"{LOGS}/filters/tokens/{{corpus}}/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/tokens/{{corpus}}/{{shard}}.tsv"
    threads: rule_threads("tokens")
    resources:
        **rule_resources("tokens", mem_mb=2000, runtime=60),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters tokens --candidates {input:q}"
        " --out {output:q} > {log:q} 2>&1"


# One score rule per filter (score_length, score_kenlm, ...): per-filter resources and
# settings, so changing one filter's setting re-scores that filter only.
for _filter in FILTERS:

    rule:
        name:
            f"score_{_filter}"
        input:
            unpack(filter_inputs(_filter)),
        output:
            f"{WORK}/scores/{_filter}/{{corpus}}/{{shard}}.parquet",
        params:
            filter=_filter,
            settings=as_json(stage_settings("filters", _filter)),
            models=filter_model_args(_filter),
        log:
            f"{LOGS}/filters/score_{_filter}/{{corpus}}/{{shard}}.log",
        benchmark:
            f"{LOGS}/benchmarks/filters/score_{_filter}/{{corpus}}/{{shard}}.tsv"
        threads: rule_threads(f"score_{_filter}")
        resources:
            **rule_resources(f"score_{_filter}", mem_mb=4000, runtime=120),
        conda:
            "../envs/nmt-gpu.yaml"
        shell:
            "paramill --rule {rule} --threads {threads} filters score --filter {params.filter:q}"
            " --candidates {input.candidates:q} --out {output:q} --settings {params.settings:q}"
            " --models {params.models:q} --launch {FILTERS_LAUNCH:q} > {log:q} 2>&1"


rule select:
    input:
        candidates=all_candidates,
        scores=score_files,
        heldout=f"{WORK}/filters/heldout.parquet",
    output:
        parquet=f"{RESULTS}/corpus/{{release}}/corpus.parquet",
        tsv=f"{RESULTS}/corpus/{{release}}/corpus.tsv",
        json=f"{RESULTS}/corpus/{{release}}/selection.json",
        paranmt=f"{RESULTS}/corpus/{{release}}/corpus.paranmt.txt",
    params:
        settings=lambda w: as_json(release_settings(w.release)),
    log:
        f"{LOGS}/filters/select.{{release}}.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/select.{{release}}.tsv"
    threads: rule_threads("select")
    resources:
        **rule_resources("select", mem_mb=8000, runtime=240),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters select --candidates {input.candidates:q}"
        " --scores {input.scores:q} --heldout {input.heldout:q} --name {wildcards.release:q}"
        " --settings {params.settings:q} --parquet {output.parquet:q} --tsv {output.tsv:q}"
        " --json {output.json:q} --paranmt {output.paranmt:q} > {log:q} 2>&1"


rule corpus_analysis:
    input:
        candidates=all_candidates,
        scores=score_files,
        corpus=f"{RESULTS}/corpus/{{release}}/corpus.parquet",
        summary=f"{RESULTS}/corpus/{{release}}/selection.json",
    output:
        stats=f"{RESULTS}/corpus/{{release}}/stats.json",
        annotation=f"{RESULTS}/corpus/{{release}}/annotation.tsv",
        datasheet=f"{RESULTS}/corpus/{{release}}/datasheet.md",
        card=f"{RESULTS}/corpus/{{release}}/README.md",
        plot=report(f"{RESULTS}/corpus/{{release}}/scores.png", category="Corpus",
                    caption="../report/scores.rst",
                    labels={"release": "{release}", "file": "score distributions"}),
    params:
        settings=as_json(config["filters"]["analysis"]),
        sources=as_json({"corpora": config["bitext"]["corpora"],
                         "pairs": config["pairs"]["corpora"],
                         "translate": config["nmt"]["translate"]}),
        out_dir=lambda w: f"{RESULTS}/corpus/{w.release}",
    log:
        f"{LOGS}/filters/corpus_analysis.{{release}}.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/corpus_analysis.{{release}}.tsv"
    threads: rule_threads("corpus_analysis")
    resources:
        **rule_resources("corpus_analysis", mem_mb=8000, runtime=240),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters analyse --candidates {input.candidates:q}"
        " --scores {input.scores:q} --corpus {input.corpus:q} --summary {input.summary:q}"
        " --name {wildcards.release:q} --sources {params.sources:q}"
        " --settings {params.settings:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule score_by_method:
    input:
        candidates=all_candidates,
        scores=score_files,
    output:
        tsv=f"{RESULTS}/pairs/scores_by_method.tsv",
        json=f"{RESULTS}/pairs/scores_by_method.json",
        png=report(f"{RESULTS}/pairs/scores_by_method.png", category="Corpus",
                   caption="../report/scores_by_method.rst",
                   labels={"release": "all candidates", "file": "scores per method"}),
    log:
        f"{LOGS}/filters/score_by_method.log",
    benchmark:
        f"{LOGS}/benchmarks/filters/score_by_method.tsv"
    threads: rule_threads("score_by_method")
    resources:
        **rule_resources("score_by_method", mem_mb=4000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} filters by-method --candidates {input.candidates:q}"
        " --scores {input.scores:q} --tsv {output.tsv:q} --json {output.json:q}"
        " --png {output.png:q} > {log:q} 2>&1"
