# Paraphrase lexicon (ParaNMT appendix A.1) from a released corpus, evaluated on SimLex.


rule lexicon:
    input:
        f"{RESULTS}/corpus/{config['lexicon']['release']}/corpus.parquet",
    output:
        tsv=f"{RESULTS}/lexicon/lexicon.tsv",
        neighbours=f"{RESULTS}/lexicon/neighbours.tsv",
        stats=f"{RESULTS}/lexicon/stats.json",
    params:
        settings=as_json(stage_settings("lexicon")),
        spill=f"{WORK}/lexicon",
    log:
        f"{LOGS}/lexicon/lexicon.log",
    benchmark:
        f"{LOGS}/benchmarks/lexicon/lexicon.tsv"
    threads: rule_threads("lexicon", 2)
    resources:
        **rule_resources("lexicon", mem_mb=8000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} lexicon build {input:q}"
        " --settings {params.settings:q} --launch {LEXICON_LAUNCH:q}"
        " --tsv {output.tsv:q} --neighbours {output.neighbours:q}"
        " --stats {output.stats:q} --spill-dir {params.spill:q} > {log:q} 2>&1"


rule lexicon_simlex:
    input:
        lexicon=f"{RESULTS}/lexicon/lexicon.tsv",
        simlex=ancient(config["lexicon"]["simlex"] or []),
    output:
        tsv=f"{RESULTS}/lexicon/simlex.tsv",
        json=f"{RESULTS}/lexicon/simlex.json",
    log:
        f"{LOGS}/lexicon/lexicon_simlex.log",
    benchmark:
        f"{LOGS}/benchmarks/lexicon/lexicon_simlex.tsv"
    threads: 1
    resources:
        **rule_resources("lexicon_simlex", mem_mb=2000, runtime=20),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} lexicon simlex --lexicon {input.lexicon:q}"
        " --simlex {input.simlex:q} --tsv {output.tsv:q} --json {output.json:q} > {log:q} 2>&1"
