# NMT: SentencePiece per language, OpenNMT-py training per direction, CTranslate2
# conversion, and back-translation of every cleaned shard (one job per shard).


rule spm_train:
    input:
        training_shards,
    output:
        f"{WORK}/nmt/spm/{{lang}}.model",
    params:
        settings=as_json(config["nmt"]["spm"]),
    log:
        f"{LOGS}/nmt/spm_train.{{lang}}.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/spm_train.{{lang}}.tsv"
    threads: rule_threads("spm_train")
    resources:
        **rule_resources("spm_train", mem_mb=8000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt spm {input:q} --lang {wildcards.lang:q}"
        " --model {output:q} --settings {params.settings:q} > {log:q} 2>&1"


rule nmt_data:
    input:
        training_shards,
    output:
        directory(f"{WORK}/nmt/data"),
    params:
        settings=as_json({k: config["nmt"][k] for k in ("valid_size", "seed")}),
    log:
        f"{LOGS}/nmt/nmt_data.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/nmt_data.tsv"
    threads: rule_threads("nmt_data")
    resources:
        **rule_resources("nmt_data", mem_mb=2000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt data {input:q} --out {output:q}"
        " --settings {params.settings:q} > {log:q} 2>&1"


rule nmt_train:
    input:
        data=f"{WORK}/nmt/data",
        src_spm=lambda w: spm_model(w.direction, "source"),
        tgt_spm=lambda w: spm_model(w.direction, "target"),
    output:
        f"{WORK}/nmt/{{direction}}/model.pt",
    params:
        model=as_json(config["nmt"]["model"]),
        train=as_json(config["nmt"]["train"]),
        work=lambda w: f"{WORK}/nmt/{w.direction}/train",
    log:
        f"{LOGS}/nmt/nmt_train.{{direction}}.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/nmt_train.{{direction}}.tsv"
    threads: rule_threads("nmt_train")
    resources:
        **rule_resources("nmt_train", resumes=True, mem_mb=8000, runtime=2880),
    conda:
        "../envs/nmt-gpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt train"
        " --direction {wildcards.direction:q} --data {input.data:q}"
        " --src-spm {input.src_spm:q} --tgt-spm {input.tgt_spm:q} --work {params.work:q}"
        " --out {output:q} --model-settings {params.model:q} --settings {params.train:q}"
        " > {log:q} 2>&1"


rule nmt_convert:
    input:
        checkpoint=checkpoint_to_convert,
        src_spm=lambda w: spm_model(w.direction, "source"),
        tgt_spm=lambda w: spm_model(w.direction, "target"),
    output:
        directory(f"{WORK}/nmt/{{direction}}/ct2"),
    params:
        settings=as_json({"quantization": config["nmt"]["quantization"]}),
    log:
        f"{LOGS}/nmt/nmt_convert.{{direction}}.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/nmt_convert.{{direction}}.tsv"
    threads: rule_threads("nmt_convert")
    resources:
        **rule_resources("nmt_convert", mem_mb=4000, runtime=60),
    conda:
        "../envs/nmt-gpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt convert --checkpoint {input.checkpoint:q}"
        " --src-spm {input.src_spm:q} --tgt-spm {input.tgt_spm:q} --out {output:q}"
        " --settings {params.settings:q} > {log:q} 2>&1"


rule nmt_translate:
    input:
        unpack(nmt_translate_inputs),
    output:
        f"{WORK}/candidates/{{corpus}}/{{shard}}.parquet",
    params:
        settings=as_json(stage_settings("nmt", "translate")),
        bwd=lambda wildcards, input: input.get("bwd", ""),
        sample=as_json(config["nmt"]["sample"]) if sampling() else "null",
    log:
        f"{LOGS}/nmt/nmt_translate/{{corpus}}/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/nmt_translate/{{corpus}}/{{shard}}.tsv"
    threads: rule_threads("nmt_translate")
    resources:
        **rule_resources("nmt_translate", mem_mb=4000, runtime=240),
    conda:
        "../envs/nmt-gpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt translate --shard {input.shard:q}"
        " --model {input.model:q} --src-spm {input.src_spm:q} --tgt-spm {input.tgt_spm:q}"
        " --out {output:q} --settings {params.settings:q}"
        " --bwd-model={params.bwd:q} --sample-settings {params.sample:q}"
        " > {log:q} 2>&1"


rule backtranslation_stats:
    input:
        back_translated,
    output:
        f"{RESULTS}/nmt/backtranslation.json",
    log:
        f"{LOGS}/nmt/backtranslation_stats.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/backtranslation_stats.tsv"
    threads: rule_threads("backtranslation_stats")
    resources:
        **rule_resources("backtranslation_stats", mem_mb=2000, runtime=30),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt stats {input:q} --out {output:q}"
        " > {log:q} 2>&1"


rule diversity_stats:
    input:
        candidates=back_translated,
        spm=spm_model("cs-en", "target"),
    output:
        tsv=f"{RESULTS}/nmt/diversity.tsv",
        json=f"{RESULTS}/nmt/diversity.json",
        png=report(f"{RESULTS}/nmt/diversity.png", category="Back-translation",
                   caption="../report/diversity.rst", labels={"figure": "diversity by rank"}),
    log:
        f"{LOGS}/nmt/diversity_stats.log",
    benchmark:
        f"{LOGS}/benchmarks/nmt/diversity_stats.tsv"
    threads: rule_threads("diversity_stats")
    resources:
        **rule_resources("diversity_stats", mem_mb=4000, runtime=60),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} nmt diversity {input.candidates:q} --spm {input.spm:q}"
        " --tsv {output.tsv:q} --json {output.json:q} --png {output.png:q} > {log:q} 2>&1"
