# Lean-mode CPU AdamW benchmark (bench/cpu_adamw_lean.c): target `cpu_adamw_lean`, lean beside the
# fp32-master update of the same bf16 params on each path.
zs_exe(cpu_adamw_lean SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/cpu_adamw_lean.c LIBS PkgConfig::HWLOC PkgConfig::JEMALLOC)
