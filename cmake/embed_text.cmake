# cmake -DINPUT=file -DOUTPUT=file.inc [-DINLINE_SCRIPT=ON] -P embed_text.cmake
# Writes INPUT's text to OUTPUT as one C++ raw string literal, to be #included where the text is needed:
# shipped files (the default rules, the HTML report's page and script) stay ordinary files in the source tree.
file(READ "${INPUT}" text)
set(delimiter "precdetect")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds `)${delimiter}\"` and cannot be embedded as a raw string literal")
endif()
# A script inlined in <script> must not hold "</script" (it ends the element) nor "<!--" (it changes how the
# HTML parser reads on).
string(TOLOWER "${text}" lower)
if(INLINE_SCRIPT AND (lower MATCHES "</script" OR lower MATCHES "<!--"))
  message(FATAL_ERROR "${INPUT} holds `</script` or `<!--` and cannot be inlined in an HTML <script> element")
endif()
file(WRITE "${OUTPUT}" "R\"${delimiter}(${text})${delimiter}\"\n")
