# The NVMe tier's read | AdamW | write stream against the disk's O_DIRECT rate (bench/nvme.sh).
zs_exe(nvme_stream SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/nvme_stream.c LIBS PkgConfig::HWLOC)
