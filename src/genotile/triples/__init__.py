"""The 3-way workload: ccc3 over block triples of SNP vectors, tiles and merge."""
