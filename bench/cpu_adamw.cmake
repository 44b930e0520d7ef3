# CPU AdamW benchmark (bench/cpu_adamw.c): target `cpu_adamw`. Run it with the torch peer through
# scripts/bench-cpu-adamw.sh.
zs_exe(cpu_adamw SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/cpu_adamw.c LIBS PkgConfig::HWLOC PkgConfig::JEMALLOC)
