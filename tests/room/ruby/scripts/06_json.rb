require 'json'
data = JSON.parse('{"name":"peri","tags":["a","b"],"n":3,"ok":true,"none":null,"f":1.5}')
puts data["name"], data["tags"].join("+"), data["n"] + 1, data["ok"], data["none"].nil?, data["f"] * 2
puts JSON.generate({"x" => [1, 2, {"y" => "z"}], "u" => "é"})
puts JSON.pretty_generate({"a" => 1, "b" => [true, false]})
puts({"k" => :sym}.to_json)
begin
  JSON.parse("{bad")
rescue JSON::ParserError
  puts "parse error"
end
