//! Criterion benchmarks. Run: `cargo bench` (add `-- --quick` for a smoke run).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fedmix::metrics::bottleneck_distance;
use fedmix::synthetic::generate_named;

fn bench_metrics(c: &mut Criterion) {
    let data = generate_named("sxy-balanced", 1, &[]).expect("setting generates");
    let ts = data
        .train
        .theta_star()
        .expect("synthetic data has theta_star")
        .clone();
    let est = ts.map(|v| v * 1.01);
    let mut group = c.benchmark_group("metrics");
    group.bench_with_input(
        BenchmarkId::new("bottleneck_distance", "k3_d100"),
        &est,
        |b, est| b.iter(|| bottleneck_distance(est, &ts).expect("valid")),
    );
    group.finish();
}

fn bench_generate(c: &mut Criterion) {
    c.bench_function("generate/sxy-balanced", |b| {
        b.iter(|| generate_named("sxy-balanced", 1, &[]).expect("setting generates"))
    });
}

criterion_group!(benches, bench_metrics, bench_generate);
criterion_main!(benches);
