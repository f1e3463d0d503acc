//! Fills a 64 MiB region with 8 MiB resident, reads it all back, and prints the counters.
//!
//! ```sh
//! sudo cargo run --release -p uswap --example fill
//! ```

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use uswap::{Region, RegionConfig};

    let pages = 16 * 1024;
    let config = RegionConfig::new(2048, Box::new(|| Box::new(lzokit::LzoRle::default())));
    let mut region = Region::new(pages, config)?;
    let start = std::time::Instant::now();
    let mut page = vec![0u8; 4096];
    for p in 0..pages {
        for (i, chunk) in page.chunks_exact_mut(8).enumerate() {
            let word = if i % 8 == 0 { p as u64 } else { (i % 5) as u64 };
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        region.write(p * 4096, &page)?;
    }
    let mut back = vec![0u8; 4096];
    for p in 0..pages {
        region.read(p * 4096, &mut back)?;
        if back[..8] != (p as u64).to_le_bytes() {
            return Err(format!("page {p} came back wrong").into());
        }
    }
    let stats = region.stats();
    println!(
        "{pages} pages in {:.2} s: {} swapped out, {} swapped in, {} zero-filled; fault median {} ns, \
         p99 {} ns; {} pages stored in {} bytes",
        start.elapsed().as_secs_f64(),
        stats.swap_outs,
        stats.faults_from_store,
        stats.zero_fills,
        stats.fault_latency.median,
        stats.fault_latency.p99,
        stats.store.pages,
        stats.store.mm.mem_used_total
    );
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("uswap needs Linux's userfaultfd");
}
