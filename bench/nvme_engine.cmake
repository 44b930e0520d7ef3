# The engine's step with the optimizer state on the NVMe tier beside host offload (bench/nvme.sh).
zs_exe(nvme_engine SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/nvme_engine.c)
