/*
 * json_locale.h — the "--locale NAME" option of the JSON tests (test_json, test_json_diff):
 * everything runs again under a locale whose decimal point is ','. One static function,
 * included by each test's main.
 */
#ifndef PERI_TESTS_JSON_LOCALE_H
#define PERI_TESTS_JSON_LOCALE_H

#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* 0 to run the tests (*foreign, when not NULL, tells whether a decimal-comma locale is
 * now in effect);
 * 77 (skipped) when the named locale cannot be set or does not use a decimal comma. */
static int json_test_locale(int argc, char **argv, bool *foreign) {
    if (foreign) *foreign = false;
    if (argc != 3 || strcmp(argv[1], "--locale") != 0) return 0;
    if (!setlocale(LC_ALL, argv[2])) {
        printf("locale %s is not available: not run\n", argv[2]);
        return 77;
    }
    char probe[16];
    snprintf(probe, sizeof probe, "%.1f", 1.5);
    if (strcmp(probe, "1,5") != 0) {
        printf("locale %s does not use a decimal comma: not run\n", argv[2]);
        return 77;
    }
    if (foreign) *foreign = true;
    return 0;
}

#endif
