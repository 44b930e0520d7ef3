# What an asynchronous save costs training against the synchronous one (bench/ckpt_async.c).
zs_exe(ckpt_async SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/ckpt_async.c)
