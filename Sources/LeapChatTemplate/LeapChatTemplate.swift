// LeapChatTemplate: a Jinja interpreter for chat templates, output identical to Python jinja2 (issue 5).
