# Pair corpora: released paraphrase corpora and MT outputs read straight into candidate shards
# (cleaned, deduplicated against the pair corpora before them), then counted. No NMT.


checkpoint pairs_ingest:
    input:
        files=lambda w: [ancient(f) for f in pair_corpus_files(w)],
        prior=earlier_pair_corpora,
    output:
        directory(f"{WORK}/pairs/{{corpus}}"),
    params:
        spec=lambda w: as_json(config["pairs"]["corpora"][w.corpus]),
        clean=as_json(stage_settings("pairs", "clean")),
        settings=as_json(stage_settings("pairs", "ingest")),
    log:
        f"{LOGS}/pairs/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/pairs/{{corpus}}.tsv"
    threads: rule_threads("pairs_ingest")
    resources:
        **rule_resources("pairs_ingest", mem_mb=4000, runtime=240),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} pairs ingest --corpus {wildcards.corpus:q} --spec {params.spec:q}"
        " --prior-keys {input.prior:q} --clean {params.clean:q} --settings {params.settings:q}"
        " --launch {PAIRS_INGEST_LAUNCH:q}"
        " --out {output:q} > {log:q} 2>&1"


rule pairs_stats:
    input:
        [f"{WORK}/pairs/{c}" for c in PAIR_CORPORA],
    output:
        json=f"{RESULTS}/pairs/stats.json",
        tsv=f"{RESULTS}/pairs/stats.tsv",
    log:
        f"{LOGS}/pairs/stats.log",
    benchmark:
        f"{LOGS}/benchmarks/pairs/stats.tsv"
    threads: rule_threads("pairs_stats")
    resources:
        **rule_resources("pairs_stats", mem_mb=1000, runtime=10),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} pairs stats {input:q} --json {output.json:q} --tsv {output.tsv:q}"
        " > {log:q} 2>&1"
