# Embeddings: train each named model on a released corpus (embed.release); score it on
# STS data.
# `snakemake sweep` trains one model per point of embed.sweep.grid and collects one table.


rule embed_train:
    input:
        embed_pairs,
    output:
        f"{WORK}/embed/{{model}}/model.pt",
    params:
        spec=lambda w: as_json(embed_settings(w.model)[0]),
        settings=lambda w: embed_train_params(embed_settings(w.model)[1]),
    log:
        f"{LOGS}/embed/embed_train.{{model}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed/embed_train.{{model}}.tsv"
    threads: rule_threads("embed_train", 2)
    resources:
        **rule_resources("embed_train", resumes=True, mem_mb=8000, runtime=720),
    conda:
        "../envs/nmt-gpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} embed train {input:q}"
        " --out {output:q} --spec {params.spec:q} --settings {params.settings:q}"
        " --launch {EMBED_TRAIN_LAUNCH:q} > {log:q} 2>&1"


rule embed_export:
    input:
        f"{WORK}/embed/{{model}}/model.pt",
    output:
        directory(f"{RESULTS}/embed/{{model}}/sentence-transformers"),
    log:
        f"{LOGS}/embed/embed_export.{{model}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed/embed_export.{{model}}.tsv"
    threads: rule_threads("embed_export")
    resources:
        **rule_resources("embed_export", mem_mb=4000, runtime=30),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} embed export {input:q} {output:q} > {log:q} 2>&1"


rule sts_eval:
    input:
        model=f"{WORK}/embed/{{model}}/model.pt",
        data=ancient(sts_paths()),
    output:
        tsv=f"{RESULTS}/embed/{{model}}/sts.tsv",
        json=f"{RESULTS}/embed/{{model}}/sts.json",
    params:
        datasets=as_json(config["evaluate"]["sts"]),
    log:
        f"{LOGS}/embed/sts_eval.{{model}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed/sts_eval.{{model}}.tsv"
    threads: rule_threads("sts_eval")
    resources:
        **rule_resources("sts_eval", mem_mb=4000, runtime=60),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} evaluate sts --model {input.model:q}"
        " --datasets {params.datasets:q} --tsv {output.tsv:q} --json {output.json:q} > {log:q} 2>&1"


rule sweep:
    input:
        expand(f"{RESULTS}/embed/{{model}}/sts.json", model=list(sweep_points(config["embed"]))),
    output:
        f"{RESULTS}/embed/sweep.tsv",
    params:
        points=as_json({n: p["point"] for n, p in sweep_points(config["embed"]).items()}),
    log:
        f"{LOGS}/embed/sweep.log",
    benchmark:
        f"{LOGS}/benchmarks/embed/sweep.tsv"
    threads: rule_threads("sweep")
    resources:
        **rule_resources("sweep", mem_mb=1000, runtime=10),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} evaluate sweep {input:q} --points {params.points:q}"
        " --out {output:q} > {log:q} 2>&1"


# `snakemake sts_data` downloads the official archives (internet needed; sha256 pinned in
# paramill.evaluate.download) into evaluate.download_dir; point evaluate.sts at the files.
rule sts_download:
    # the web: where snakemake runs, unless resources.sts_download.local is false
    localrule: rule_local("sts_download", True)
    output:
        directory(f"{config['evaluate']['download_dir']}/{{archive}}"),
    log:
        f"{LOGS}/embed/sts_download.{{archive}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed/sts_download.{{archive}}.tsv"
    threads: 1
    resources:
        **rule_resources("sts_download", mem_mb=1000, runtime=30),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} evaluate download {wildcards.archive:q} --out {output:q}"
        " > {log:q} 2>&1"


rule sts_data:
    input:
        expand(f"{config['evaluate']['download_dir']}/{{archive}}",
               archive=["stsbenchmark", "stscompanion", "sts2017"]),
