"""The ground floor: atomic writes, checksums, progress, CPU counts and checked read-backs.

Nothing here imports a genotile module above `errors`."""
