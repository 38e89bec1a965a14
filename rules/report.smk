# Report: figures and tables registered with report() for `snakemake --report report.html`.


rule plot_bitext_outcomes:
    input:
        tsv=f"{RESULTS}/bitext/outcomes.tsv",
    output:
        report(
            f"{RESULTS}/report/bitext_outcomes.png",
            category="Bitext",
            caption="../report/bitext_outcomes.rst",
        ),
    log:
        f"{LOGS}/report/plot_bitext_outcomes.log",
    benchmark:
        f"{LOGS}/benchmarks/plot_bitext_outcomes.tsv"
    threads: rule_threads("plot_bitext_outcomes")
    resources:
        **rule_resources("plot_bitext_outcomes", mem_mb=1000, runtime=10),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} report outcomes --tsv {input.tsv:q}"
        " --out {output:q} > {log:q} 2>&1"


rule provenance_summary:
    input:
        default_targets(),  # it runs last and reads every record under the two folders
    output:
        html=report(
            f"{RESULTS}/report/provenance.html",
            category="Provenance",
            caption="../report/provenance.rst",
        ),
        tsv=f"{RESULTS}/report/provenance.tsv",
        glance=report(
            f"{RESULTS}/report/glance.html",
            category="At a glance",
            caption="../report/glance.rst",
            labels={"page": "summary: what ran, on what, what came out"},
        ),
        pages=report(
            f"{RESULTS}/report/pages.html",
            category="At a glance",
            labels={"page": "tables and datasheets"},
        ),
    params:
        # the folders whose records it collects (functions: not file prefixes to stage)
        work=lambda wildcards: WORK,
        results=lambda wildcards: RESULTS,
    log:
        f"{LOGS}/report/provenance_summary.log",
    benchmark:
        f"{LOGS}/benchmarks/provenance_summary.tsv"
    threads: rule_threads("provenance_summary")
    resources:
        **rule_resources("provenance_summary", mem_mb=1000, runtime=10),
    conda:
        "../envs/cpu.yaml"
    shell:
        "paramill --rule {rule} --threads {threads} report provenance --under {params.work:q}"
        " --under {params.results:q}"
        " --html {output.html:q} --tsv {output.tsv:q} --glance {output.glance:q}"
        " --results {params.results:q} --pages {output.pages:q} --render {input:q} > {log:q} 2>&1"
