/* The tier of each array and unit (tier.h): the state table says, this file only looks it up. */
#include "tier/tier.h"

const zs_tier_ops *zs_tier_ops_at(zs_tier k) {
  return k == ZS_TIER_NVME   ? &zs_tier_nvme_ops
         : k == ZS_TIER_HOST ? &zs_tier_host_ops
                             : &zs_tier_device_ops;
}

zs_state zs_arr_state(const zs_unit *u, zs_arr a) {
  if (a != ZS_ARR_MASTER) return ZS_ST_OPT((int)a - ZS_ARR_OPT0);
  if (zs_state_is(&u->st, ZS_ST_MASTER_REM, ZS_LIFE_PERSISTENT)) return ZS_ST_MASTER_REM;
  /* ZS_MASTER_PARAMS without a copy: the master is u->master, the alias of the params' home. */
  if (u->master && zs_state_is(&u->st, ZS_ST_MASTER, ZS_LIFE_NONE))
    return zs_state_home(&u->st, ZS_ST_PARAM_FULL);
  return ZS_ST_MASTER;
}

const zs_tier_ops *zs_tier_of(const zs_unit *u, zs_arr a) {
  return zs_tier_ops_at(u->st.s[zs_arr_state(u, a)].tier);
}

size_t zs_tier_elem(const zs_unit *u, zs_arr a) {
  return zs_dtype_size(u->st.s[zs_arr_state(u, a)].dtype);
}

const zs_tier_ops *zs_tier_of_unit(const zs_unit *u) {
  return zs_unit_on_nvme(u) ? &zs_tier_nvme_ops : &zs_tier_device_ops;
}
