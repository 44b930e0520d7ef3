/* A cJSON helper both examples' config.json exports use. */
#ifndef COMMON_JSON_PUT_H
#define COMMON_JSON_PUT_H

#include <cjson/cJSON.h>

/* Sets key of object o to item (o takes it): replaces the value a source config gave, else adds
   the key, so every other field of the source stays as it was. */
static inline void ex_json_put(cJSON *o, const char *key, cJSON *item) {
  if (cJSON_HasObjectItem(o, key))
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, item);
  else
    cJSON_AddItemToObject(o, key, item);
}

#endif
