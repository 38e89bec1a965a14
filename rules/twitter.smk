# Twitter URL paraphrases (Lan et al. 2017): one harvest job per day, the identifier, one
# job per month (pairs, p_paraphrase, accepted paraphrases), and growth over months.
# `snakemake work/twitter/harvest/2026-11-22.parquet` harvests that day (scripts/harvest.sh).


rule harvest:
    # the web: where snakemake runs, unless resources.harvest.local is false
    localrule: rule_local("harvest", True)
    input:
        archive=ancient(config["twitter"]["archive"]) if config["twitter"]["source"] == "archive" else [],
    output:
        day=f"{WORK}/twitter/harvest/{{date}}.parquet",
        rejected=f"{WORK}/twitter/harvest/rejected/{{date}}.parquet",
    params:
        settings=as_json(stage_settings("twitter", "harvest")),
        twitter=as_json({k: config["twitter"][k] for k in ("source", "raw_dir", "state")}),
        # the month's followed links; the one file of every month kept before, only read
        url_cache=lambda w: f"{WORK}/twitter/url-cache/{w.date[:7]}.json",
        earlier_url_cache=f"{WORK}/twitter/url-cache.json",
        # the day's news pages' cards, read where the harvest reaches the web (twitter_month's)
        card_cache=lambda w: (f"{WORK}/twitter/card-cache/{w.date[:7]}.json"
                              if config["twitter"]["pairs"]["fetch_cards"] else ""),
    log:
        f"{LOGS}/twitter/harvest/{{date}}.log",
    benchmark:
        f"{LOGS}/benchmarks/twitter/harvest/{{date}}.tsv"
    threads: 1
    resources:
        **rule_resources("harvest", mem_mb=2000, runtime=240),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} twitter harvest --date {wildcards.date:q} --out {output.day:q}"
        " --rejected {output.rejected:q}"
        " --twitter-settings {params.twitter:q} --archive {input.archive:q}"
        " --url-cache {params.url_cache:q} --earlier-url-cache {params.earlier_url_cache:q}"
        " --card-cache={params.card_cache:q}"
        " --settings {params.settings:q} --launch {TWITTER_HARVEST_LAUNCH:q} > {log:q} 2>&1"


rule twitter_identify:
    input:
        labelled=identify_labelled(),
        embed=identify_embed_model(),
        distill_text=identify_distill_text(),
    output:
        model=f"{WORK}/twitter/paraid.npz",
        report=f"{RESULTS}/twitter/paraid.json",
    params:
        settings=as_json(config["twitter"]["identify"]),
        embed=lambda w, input: input.embed if input.embed else "",
    log:
        f"{LOGS}/twitter/twitter_identify.log",
    benchmark:
        f"{LOGS}/benchmarks/twitter/twitter_identify.tsv"
    threads: rule_threads("twitter_identify")
    resources:
        **rule_resources("twitter_identify", mem_mb=4000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} twitter identify --embed-model={params.embed:q}"
        " --settings {params.settings:q} --out {output.model:q} --report {output.report:q}"
        " > {log:q} 2>&1"


rule twitter_month:
    input:
        days=month_days,
        context=month_context_days,
        model=f"{WORK}/twitter/paraid.npz",
    output:
        pairs=f"{RESULTS}/twitter/{{month}}/pairs.parquet",
        tsv=f"{RESULTS}/twitter/{{month}}/paraphrases.tsv",
        stats=f"{RESULTS}/twitter/{{month}}/stats.json",
    params:
        settings=as_json(config["twitter"]["pairs"]),
        # the news accounts; how their pages' cards are read (twitter.pairs.fetch_cards)
        harvest=as_json({k: config["twitter"]["harvest"][k] for k in ("accounts", "private_urls", "url_timeout")}),
        threshold=as_json({"threshold": config["twitter"]["identify"]["threshold"]}),
        card_cache=lambda w: f"{WORK}/twitter/card-cache/{w.month}.json",
        context_card_cache=lambda w: f"{WORK}/twitter/card-cache/{month_before(w.month)}.json",
    log:
        f"{LOGS}/twitter/twitter_month.{{month}}.log",
    benchmark:
        f"{LOGS}/benchmarks/twitter/twitter_month.{{month}}.tsv"
    threads: rule_threads("twitter_month")
    resources:
        **rule_resources("twitter_month", mem_mb=8000, runtime=120),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} twitter month {input.days:q} --month {wildcards.month:q}"
        " --model {input.model:q} --harvest-settings {params.harvest:q}"
        " --identify-settings {params.threshold:q} --card-cache {params.card_cache:q}"
        " --context {input.context:q} --context-card-cache {params.context_card_cache:q}"
        " --settings {params.settings:q} --pairs {output.pairs:q} --tsv {output.tsv:q}"
        " --stats {output.stats:q} > {log:q} 2>&1"


rule twitter_growth:
    input:
        growth_stats,
    output:
        tsv=f"{RESULTS}/twitter/growth.tsv",
        png=report(f"{RESULTS}/twitter/growth.png", category="Twitter",
                   caption="../report/growth.rst", labels={"figure": "growth"}),
    log:
        f"{LOGS}/twitter/twitter_growth.log",
    benchmark:
        f"{LOGS}/benchmarks/twitter/twitter_growth.tsv"
    threads: 1
    resources:
        **rule_resources("twitter_growth", mem_mb=1000, runtime=10),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} twitter growth {input:q} --tsv {output.tsv:q}"
        " --png {output.png:q} > {log:q} 2>&1"
