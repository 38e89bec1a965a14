# Bitext: ingest each corpus into shards, clean and deduplicate, gather statistics.


rule ingest:
    input:
        lambda w: [ancient(f) for f in corpus_files(w)],
    output:
        directory(f"{WORK}/ingest/{{corpus}}"),
    params:
        spec=lambda w: as_json(config["bitext"]["corpora"][w.corpus]),
        settings=as_json(stage_settings("bitext", "ingest")),
    log:
        f"{LOGS}/ingest/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/ingest/{{corpus}}.tsv"
    threads: rule_threads("ingest")
    resources:
        **rule_resources("ingest", mem_mb=2000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} bitext ingest --corpus {wildcards.corpus:q} --spec {params.spec:q}"
        " --settings {params.settings:q} --launch {BITEXT_INGEST_LAUNCH:q} --out {output:q} > {log:q} 2>&1"


checkpoint clean:
    input:
        ingested=f"{WORK}/ingest/{{corpus}}",
        prior=earlier_keys,
    output:
        shards=directory(f"{WORK}/shards/{{corpus}}"),
        rejected=f"{WORK}/clean/{{corpus}}.rejected.parquet",
        dedup_keys=f"{WORK}/clean/{{corpus}}.keys.parquet",
        stats=f"{WORK}/clean/{{corpus}}.stats.json",
    params:
        settings=as_json(stage_settings("bitext", "clean")),
        ingest=as_json(stage_settings("bitext", "ingest")),
    log:
        f"{LOGS}/clean/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/clean/{{corpus}}.tsv"
    threads: rule_threads("clean", 2)
    resources:
        **rule_resources("clean", mem_mb=4000, runtime=240),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} bitext clean --corpus {wildcards.corpus:q} --ingested {input.ingested:q}"
        " --prior-keys {input.prior:q} --settings {params.settings:q}"
        " --ingest-settings {params.ingest:q} --launch {BITEXT_CLEAN_LAUNCH:q} --shards {output.shards:q}"
        " --rejected {output.rejected:q} --keys {output.dedup_keys:q} --stats {output.stats:q}"
        " > {log:q} 2>&1"


rule bitext_stats:
    input:
        expand(f"{WORK}/clean/{{corpus}}.stats.json", corpus=CORPORA),
    output:
        json=f"{RESULTS}/bitext/stats.json",
        tsv=f"{RESULTS}/bitext/outcomes.tsv",
    log:
        f"{LOGS}/bitext_stats.log",
    benchmark:
        f"{LOGS}/benchmarks/bitext_stats.tsv"
    threads: rule_threads("bitext_stats")
    resources:
        **rule_resources("bitext_stats", mem_mb=1000, runtime=10),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} bitext stats {input:q} --json {output.json:q}"
        " --tsv {output.tsv:q} > {log:q} 2>&1"
